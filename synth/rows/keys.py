"""The digest items and lanes are keyed by in the item store (a leaf: every lane imports it)."""
from __future__ import annotations

import hashlib
import json


def fingerprint(*parts) -> str:
    """20 hex digits of the SHA-256 of `parts` as sorted JSON (anything else by its str)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]
