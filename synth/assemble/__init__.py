"""Dataset assembly: dedup and split by answer, real mix weights, readiness, decontamination, snapshot."""
