"""Batches for the trainer, with each token's loss weight (its row's `mix_weight`).

Padding-free: the micro-batch's rows are laid end to end in one sequence with position ids that
restart at each row; the attention keeps rows apart (transformers builds a block-diagonal mask
from the restarts), and not one pad token is computed. Padded: rows padded to the longest."""
from __future__ import annotations

from dataclasses import dataclass

import torch

IGNORE = -100


@dataclass
class WeightedCollator:
    pad_token_id: int
    padding_free: bool = True
    tokens: int = 0  # counted over every batch built: what the run really computed
    positions: int = 0

    def measured_padding(self) -> float | None:
        return round(1 - self.tokens / self.positions, 4) if self.positions else None

    def __call__(self, examples: list[dict]) -> dict:
        batch = self._collate(examples)
        self.tokens += sum(len(e["input_ids"]) for e in examples)
        self.positions += batch["input_ids"].numel()
        return batch

    def _collate(self, examples: list[dict]) -> dict:
        ids = [torch.tensor(e["input_ids"]) for e in examples]
        labels = [torch.tensor(e["labels"]) for e in examples]
        weights = [torch.full((len(e["input_ids"]),), float(e.get("weight", 1.0))) for e in examples]
        if self.padding_free:
            positions = torch.cat([torch.arange(len(x)) for x in ids])[None]
            flat_labels = torch.cat(labels)[None]
            flat_labels[positions == 0] = IGNORE  # a row's first token is never predicted from the previous row
            return {"input_ids": torch.cat(ids)[None], "labels": flat_labels, "position_ids": positions,
                    "token_weights": torch.cat(weights)[None]}
        width = max(len(x) for x in ids)
        out = {"input_ids": torch.full((len(ids), width), self.pad_token_id),
               "labels": torch.full((len(ids), width), IGNORE),
               "attention_mask": torch.zeros((len(ids), width), dtype=torch.long),
               "token_weights": torch.zeros((len(ids), width))}
        for i, (x, y, w) in enumerate(zip(ids, labels, weights)):
            out["input_ids"][i, :len(x)], out["labels"][i, :len(x)] = x, y
            out["attention_mask"][i, :len(x)], out["token_weights"][i, :len(x)] = 1, w
        return out


def padding_fraction(batch: dict, examples: list[dict]) -> float:
    """Share of the computed positions that carry no token of any row."""
    real = sum(len(e["input_ids"]) for e in examples)
    return 1.0 - real / batch["input_ids"].numel()
