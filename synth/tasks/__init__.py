"""Tasks and how answers to them are judged: the task model, reading a model's reply, the judge, the
compiler's own help as baselines, pass@k, and the split that makes tasks from rows (held-out crates
apart)."""
