"""Training order: shuffle (seeded, new each epoch), then a stable sort by difficulty, so rows of
one difficulty are mixed across sources instead of arriving in file order."""
from __future__ import annotations

import random


def epoch_order(rows: list[dict], seed: int, epoch: int) -> list[dict]:
    order = list(rows)
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return sorted(order, key=lambda r: r.get("difficulty", 5))  # sorted() is stable


class CurriculumSampler:
    """The trainer's sampler: `epoch_order` over the dataset's rows, re-shuffled at each epoch
    (the trainer calls `set_epoch`). Replaces the default random sampler, which would undo the
    difficulty order.

    With `lengths` and `batch_size` it also buckets by length: within each difficulty, rows are
    taken in shuffled windows of BUCKET_WINDOW batches, sorted by length so each batch holds rows
    of similar length (little padding), and the batches of a difficulty are shuffled again so
    long and short batches alternate."""

    BUCKET_WINDOW = 32

    def __init__(self, difficulties: list[int], seed: int, lengths: list[int] | None = None,
                 batch_size: int | None = None):
        self.rows = [{"index": i, "difficulty": d} for i, d in enumerate(difficulties)]
        self.lengths, self.batch_size = lengths, batch_size
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        order = [r["index"] for r in epoch_order(self.rows, self.seed, self.epoch)]
        if self.lengths is None or not self.batch_size:
            return iter(order)
        rng = random.Random(f"{self.seed}:{self.epoch}:buckets")
        out = []
        for difficulty in sorted({r["difficulty"] for r in self.rows}):
            band = [i for i in order if self.rows[i]["difficulty"] == difficulty]
            window = self.BUCKET_WINDOW * self.batch_size
            batches = []
            for start in range(0, len(band), window):
                chunk = sorted(band[start:start + window], key=lambda i: -self.lengths[i])
                batches += [chunk[b:b + self.batch_size] for b in range(0, len(chunk), self.batch_size)]
            rng.shuffle(batches)
            out += [i for batch in batches for i in batch]
        return iter(out)

    def __len__(self) -> int:
        return len(self.rows)
