"""`synth bench oracle`: batched vs one-rustc-per-candidate, side by side in one run.

The same candidates are checked (1) batched, `repeats` times with a fresh oracle and no cache
(median reported), and (2) one sandboxed rustc call per candidate. Both run on one worker, so
the ratio is the batching alone. `identical` says whether every batched verdict equals the solo one.
"""
from __future__ import annotations

import statistics
import time

from benchmarks.rust_candidates import rust_candidates
from oracles.rust import RustConfig, RustOracle
from oracles.verdict import Candidate


def run_oracle_bench(n: int = 500, seed: int = 0, repeats: int = 3) -> dict:
    # The stream extraction and mutation produce: clean declarations and compile-level mutants.
    pairs = rust_candidates(n, seed=seed, special_share=0.0, typed_only=True)
    candidates = [Candidate.of(text) for _, text in pairs]
    # What the pipeline knows up front: a mutant is meant to fail, an extracted declaration to pass.
    expect_pass = [expected is None for expected, _ in pairs]
    config = RustConfig(jobs=1)

    batched_times, stats = [], None
    for _ in range(max(1, repeats)):
        oracle = RustOracle(config)
        start = time.perf_counter()
        batched = oracle.check(candidates, expect_pass=expect_pass)
        batched_times.append(time.perf_counter() - start)
        stats = oracle.stats

    unhinted = RustOracle(config)
    start = time.perf_counter()
    unhinted_verdicts = unhinted.check(candidates)
    unhinted_s = time.perf_counter() - start

    solo_oracle = RustOracle(config)
    start = time.perf_counter()
    solo = [solo_oracle.check_solo(c) for c in candidates]
    solo_s = time.perf_counter() - start

    batched_s = statistics.median(batched_times)
    identical = all(b.same_result(s) and u.same_result(s) for b, u, s in zip(batched, unhinted_verdicts, solo))
    return {
        "n": n,
        "batched_s": round(batched_s, 4),
        "solo_s": round(solo_s, 4),
        "ratio": round(solo_s / batched_s, 2),
        "identical": identical,
        "ratio_without_hints": round(solo_s / unhinted_s, 2),
        "batched_ms_per_candidate": round(1000 * batched_s / n, 3),
        "solo_ms_per_candidate": round(1000 * solo_s / n, 3),
        "failing": sum(not s.passed for s in solo),
        "checked_alone_by_screen": sum(stats.solo_reasons.values()),
        "rustc_runs_batched": stats.compiler_runs,
        "toolchain": solo_oracle.toolchain,
    }
