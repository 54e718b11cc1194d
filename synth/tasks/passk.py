"""pass@k with the unbiased estimator (Chen et al. 2021), and a regression gate from a paired
bootstrap over tasks: with ~50 tasks a fixed "drop of 2 points" is noise; the gate fails only
when the confidence interval of the change lies entirely below zero."""
from __future__ import annotations

import random
from dataclasses import dataclass

from oracles.errors import InputError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n (c correct)
    passes: 1 - C(n-c, k) / C(n, k), as a stable product."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    prob = 1.0
    for i in range(n - c + 1, n + 1):
        prob *= 1.0 - k / i
    return 1.0 - prob


@dataclass
class Gate:
    delta: float  # mean per-task change (new - baseline)
    low: float
    high: float
    confidence: float
    tasks: int

    @property
    def regressed(self) -> bool:
        return self.high < 0

    def as_dict(self) -> dict:
        return {"delta": round(self.delta, 6), "ci": [round(self.low, 6), round(self.high, 6)],
                "confidence": self.confidence, "tasks": self.tasks, "regressed": self.regressed}


def bootstrap_gate(baseline: dict[str, float], new: dict[str, float], resamples: int = 2000,
                   confidence: float = 0.95, seed: int = 0, clusters: dict[str, str] | None = None) -> Gate:
    """Paired bootstrap over the tasks both runs share (per-task scores, e.g. pass@1). With
    `clusters` (task -> group), whole groups are resampled: tasks made from one declaration (a
    function's several repair mutants) rise and fall together, and resampling them one by one would
    make the interval too narrow."""
    shared = sorted(set(baseline) & set(new))
    if not shared:
        raise InputError("the baseline and this evaluation share no task")
    units: dict[str, list[float]] = {}
    for t in shared:
        units.setdefault((clusters or {}).get(t, t), []).append(new[t] - baseline[t])
    sums = [(sum(u), len(u)) for _, u in sorted(units.items())]
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = rng.choices(sums, k=len(sums))
        means.append(sum(s for s, _ in drawn) / sum(n for _, n in drawn))
    means.sort()
    tail = (1 - confidence) / 2
    low = means[int(tail * (resamples - 1))]
    high = means[int((1 - tail) * (resamples - 1) + 0.5)]
    total = sum(s for s, _ in sums)
    return Gate(delta=total / len(shared), low=low, high=high, confidence=confidence, tasks=len(shared))


def compare_results(before: dict, after: dict, resamples: int, confidence: float, seed: int = 0,
                    family: str | None = None, key: str = "pass@1") -> dict:
    """The paired bootstrap of the per-task change from one evaluation (`synth eval`'s JSON) to
    another, over one family's tasks or all, resampling answer groups."""
    def scores(result: dict) -> dict[str, float]:
        return {t: p[key] for t, p in result["per_task"].items() if family is None or p["family"] == family}
    groups = {t: p.get("group") or t for t, p in after["per_task"].items()}
    return bootstrap_gate(scores(before), scores(after), resamples, confidence, seed, clusters=groups).as_dict()
