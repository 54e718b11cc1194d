"""Evaluation: a model's (or a baseline's) answers to held-out tasks, judged (`synth eval`)."""
