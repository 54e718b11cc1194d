"""Balancing repair rows: no mutation operator and no primary diagnostic code may hold more than
a share of them, so no one kind of error fills what a model learns from; and rows the compiler's
own help fixes hold at most their cap."""
from __future__ import annotations

import random
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rows are only read here
    from synth.rows.row import Row


def seeded_rng(seed: int, *parts: str) -> random.Random:
    return random.Random(f"{seed}:" + ":".join(parts))


def balance(rows: list[Row], max_share: float, seed: int,
            operator_caps: dict[str, float] | None = None) -> tuple[list[Row], list[Row]]:
    """The largest set of rows (taken in seeded priority order) in which no operator and no
    primary diagnostic code holds more than `max_share` (`operator_caps` may be tighter)."""
    caps = operator_caps or {}
    order = sorted(rows, key=lambda r: seeded_rng(seed, r.id).random())
    target = len(order)
    picked: list[Row] = []
    while target > 0:
        op_used, code_used, picked = Counter(), Counter(), []
        for r in order:
            if op_used[r.operator] < _cap(min(max_share, caps.get(r.operator, 1.0)), target) and \
                    code_used[r.primary_code] < _cap(max_share, target):
                picked.append(r)
                op_used[r.operator] += 1
                code_used[r.primary_code] += 1
                if len(picked) == target:
                    break
        if len(picked) >= target:
            break
        target = len(picked)  # not reachable: try the size that was
    keep_ids = {r.id for r in picked[:target]}
    return [r for r in rows if r.id in keep_ids], [r for r in rows if r.id not in keep_ids]


def _cap(share: float, target: int) -> int:
    """Rows one operator (or code) may hold: its share of the target, and never less than one,
    so a small crate with a handful of killed mutants still gives rows."""
    return max(1, int(share * target))


def cap_solvable(rows: list[Row], max_share: float, seed: int) -> tuple[list[Row], list[Row]]:
    """The rows with at most `max_share` of them ones the compiler's help alone fixes
    (`compiler_solvable`), those dropped taken in seeded order: rows that teach a model to copy
    rustc's words are not what a repair model is for."""
    solvable = [r for r in rows if getattr(r, "compiler_solvable", None)]
    if max_share >= 1 or not solvable:
        return rows, []
    others = len(rows) - len(solvable)
    room = int(max_share * others / (1 - max_share))
    order = sorted(solvable, key=lambda r: seeded_rng(seed, "solvable", r.id).random())
    drop = {r.id for r in order[room:]}
    return [r for r in rows if r.id not in drop], [r for r in rows if r.id in drop]
