"""Training side: one chat template, encoding that keeps the answer, curriculum, trainers."""
