"""From a snapshot to trainer examples: the split is checked (no answer group on both sides),
the data fingerprinted, every row encoded with its loss weight, and rows left with no supervised
token counted and dropped rather than trained on."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from oracles.errors import MissingInput
from synth.assemble.answers import LeakedSplit, answer_hash
from synth.rows.rowfile import existing_rows, read_rows

from synth.prompting.chat import row_messages
from training.data.encode import encode


@dataclass
class Examples:
    rows: list[dict]  # input_ids, labels, weight, difficulty
    stats: dict = field(default_factory=dict)


def load_split(data_dir: str | Path) -> tuple[list[dict], list[dict]]:
    data = Path(data_dir)
    train = existing_rows(data, "train")
    if not train.exists():
        raise MissingInput(f"{train}: no training rows (point `data` at a snapshot from `synth assemble`)")
    val = existing_rows(data, "val")
    return read_rows(train), (read_rows(val) if val.exists() else [])


def split_group(row: dict) -> str:
    """The grouping `synth assemble` splits by: the normalized answer. Rows that share it are the
    same solution, and one in train with its twin in validation is validation leakage."""
    return answer_hash(row_messages(row)[-1]["content"], row.get("lang", ""))


def check_grouped_split(train: list[dict], val: list[dict]) -> int:
    """Raises if any answer group has rows on both sides; returns the number of groups."""
    train_groups = {split_group(r) for r in train}
    leaked = [r.get("id", "?") for r in val if split_group(r) in train_groups]
    if leaked:
        raise LeakedSplit(f"{len(leaked)} validation rows share an answer group with training rows "
                          f"(e.g. {leaked[:3]}); re-assemble the snapshot instead of training on a leaked split")
    return len(train_groups | {split_group(r) for r in val})


def fingerprint(paths: list[Path]) -> str:
    """Content hash of the training data, in order (a checkpoint is tied to it)."""
    digest = hashlib.sha256()
    for path in paths:
        if path.exists():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def snapshot_fingerprint(data_dir: str | Path) -> str:
    data = Path(data_dir)
    return fingerprint([existing_rows(data, "train"), existing_rows(data, "val")])


def encode_rows(rows: list[dict], tokenizer, max_len: int) -> Examples:
    examples, stats = [], {"rows": len(rows), "trained": 0, "zero_supervised": 0, "prompt_trimmed_rows": 0,
                           "answer_trimmed_rows": 0, "supervised_tokens": 0, "tokens": 0}
    for row in rows:
        enc = encode(row_messages(row), tokenizer, max_len)
        if not enc.trainable:
            stats["zero_supervised"] += 1
            continue
        stats["trained"] += 1
        stats["prompt_trimmed_rows"] += enc.prompt_trimmed > 0
        stats["answer_trimmed_rows"] += enc.answer_trimmed > 0
        stats["supervised_tokens"] += enc.supervised
        stats["tokens"] += len(enc.input_ids)
        examples.append({"input_ids": enc.input_ids, "labels": enc.labels,
                         "weight": float(row.get("mix_weight", 1.0)), "difficulty": int(row.get("difficulty", 5))})
    return Examples(rows=examples, stats=stats)
