"""Draws of a sampled evaluation (`synth eval --draws N`, `[eval] draws`): the same model on the
same tasks, its samples drawn again with a seed of its own each time. One draw of 8 samples moves a
picked repairer's rate by a few points (on the loop's 196 held-out repair tasks, two draws of one
model 73.0% and 74.5%), so a bar is judged on the mean of draws decided before any is seen, not on
whichever draw came out. Draw 0 is the evaluation one draw makes; the others are written beside it
as evaluations of their own (`OUT.drawN.json` and their answers)."""
from __future__ import annotations

from pathlib import Path

# seeds of two draws lie this far apart: farther than any batch number (a batch's sampling seed is
# its draw's plus its number), so no two draws share a random stream
DRAW_STRIDE = 1_000_003
DRAWN_RATES = ("pass_at_1", "compile_rate")  # what the summary lists per family


def draw_seed(seed: int, draw: int) -> int:
    return seed + draw * DRAW_STRIDE


def draw_path(out: str | Path, draw: int) -> Path:
    """Where draw `draw` (1..) of the evaluation written to `out` is kept."""
    return Path(out).with_suffix(f".draw{draw}.json")


def draws_summary(results: list[dict], out: str | Path, seed: int) -> dict:
    """Per family, the rate of every draw (draw 0 first) with their mean and range; each draw's
    seed and file."""
    families = {}
    for family in results[0]["families"]:
        families[family] = {}
        for key in DRAWN_RATES:
            each = [r["families"].get(family, {}).get(key) for r in results]
            if None not in each:
                families[family][key] = {"each": each, "mean": round(sum(each) / len(each), 4),
                                         "min": min(each), "max": max(each)}
    files = [Path(out).name] + [draw_path(out, n).name for n in range(1, len(results))]
    return {"seeds": [draw_seed(seed, n) for n in range(len(results))], "files": files, "families": families}
