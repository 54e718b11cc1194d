"""Rows and where they are kept: the row model, row files (packed and plain JSONL), the item store a
refresh reuses, and the rejection (why an item or a row was not kept)."""
