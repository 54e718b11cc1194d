"""From a snapshot to batches: encoding that keeps the answer, loss weights, curriculum order."""
