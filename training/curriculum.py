"""Training order: shuffle (seeded, new each epoch), then a stable sort by difficulty, so rows of
one difficulty are mixed across sources instead of arriving in file order."""
from __future__ import annotations

import random


def epoch_order(rows: list[dict], seed: int, epoch: int) -> list[dict]:
    order = list(rows)
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return sorted(order, key=lambda r: r.get("difficulty", 5))  # sorted() is stable
