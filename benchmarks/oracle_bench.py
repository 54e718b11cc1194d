"""`synth bench oracle`: batched vs one-rustc-per-candidate, side by side in one run.

The same candidates are checked (1) batched, `repeats` times with a fresh oracle and no cache
(median reported), and (2) one sandboxed rustc call per candidate (total), the two interleaved.
Both sides use the same number of workers (`jobs`), so the ratio is the batching alone. `ratio_without_hints` is the same
batch without the pass/fail expectation a pipeline stage knows (the case of LLM samples). `identical` says whether every batched verdict equals the solo one.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.rust_candidates import rust_candidates
from oracles.rust import RustConfig, RustOracle
from oracles.verdict import Candidate


def run_oracle_bench(n: int = 500, seed: int = 0, repeats: int = 5, jobs: int = 1) -> dict:
    # The stream extraction and mutation produce: clean declarations and compile-level mutants.
    pairs = rust_candidates(n, seed=seed, special_share=0.0, typed_only=True)
    candidates = [Candidate.of(text) for _, text in pairs]
    # What the pipeline knows up front: a mutant is meant to fail, an extracted declaration to pass.
    expect_pass = [expected is None for expected, _ in pairs]
    config = RustConfig(jobs=jobs)

    # Interleave: a batched run, then a slice of the solo checks, and so on, so both sides see the
    # same moments of this shared, noisy machine.
    solo_oracle = RustOracle(config)
    slices = [range(len(candidates))[k::repeats] for k in range(repeats)]
    batched_times: list[float] = []
    solo_by_index = {}
    solo_s = 0.0
    for k in range(repeats):
        oracle = RustOracle(config)
        start = time.perf_counter()
        batched = oracle.check(candidates, expect_pass=expect_pass)
        batched_times.append(time.perf_counter() - start)
        stats = oracle.stats
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for i, verdict in zip(slices[k], pool.map(lambda i: solo_oracle.check_solo(candidates[i]), slices[k])):
                solo_by_index[i] = verdict
        solo_s += time.perf_counter() - start
    solo = [solo_by_index[i] for i in range(len(candidates))]

    unhinted = RustOracle(config)
    start = time.perf_counter()
    unhinted_verdicts = unhinted.check(candidates)
    unhinted_s = time.perf_counter() - start

    batched_s = statistics.median(batched_times)
    identical = all(b.same_result(s) and u.same_result(s) for b, u, s in zip(batched, unhinted_verdicts, solo))
    return {
        "n": n,
        "jobs": jobs,
        "batched_s": round(batched_s, 4),
        "solo_s": round(solo_s, 4),
        "ratio": round(solo_s / batched_s, 2),
        "identical": identical,
        "ratio_without_hints": round(solo_s / unhinted_s, 2),
        "batched_runs_s": [round(t, 4) for t in batched_times],
        "batched_ms_per_candidate": round(1000 * batched_s / n, 3),
        "solo_ms_per_candidate": round(1000 * solo_s / n, 3),
        "failing": sum(not s.passed for s in solo),
        "checked_alone_by_screen": sum(stats.solo_reasons.values()),
        "rustc_runs_batched": stats.compiler_runs,
        "toolchain": solo_oracle.toolchain,
    }
