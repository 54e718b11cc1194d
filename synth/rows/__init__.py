"""Rows and where they are kept: the row model, row files (packed and plain JSONL) and the item store a
refresh reuses."""
