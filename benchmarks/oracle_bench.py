"""`synth bench oracle`: batched vs one-rustc-per-candidate, side by side in one run.

The same candidates are checked (1) batched, `repeats` times with a fresh oracle and no cache
(median reported), and (2) one sandboxed rustc call per candidate, the two interleaved so both
see the same moments of this shared machine. Both sides use the same number of workers, so the
ratio is the batching alone. `identical` says whether every batched verdict equals the solo one.

The stream is what the extraction and mutation stages produce: clean declarations and
compile-level mutants (60/40), with the pass/fail expectation each stage knows. The ratio depends
on the mix (rustc spends ~0.1 ms on a small clean function, ~2.5 ms on a failed method lookup), so
`streams` gives it per kind too, and `ratio_without_hints` for a stream of unknown candidates
(e.g. LLM samples).
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.rust_candidates import rust_candidates
from oracles.rust import RustConfig, RustOracle
from oracles.verdict import Candidate


def _batched(candidates, expect_pass, config) -> tuple[float, list, RustOracle]:
    oracle = RustOracle(config)
    start = time.perf_counter()
    verdicts = oracle.check(candidates, expect_pass=expect_pass)
    return time.perf_counter() - start, verdicts, oracle


def run_oracle_bench(n: int = 500, seed: int = 0, repeats: int = 5, jobs: int = 1) -> dict:
    pairs = rust_candidates(n, seed=seed, special_share=0.0, typed_only=True)
    candidates = [Candidate.of(text) for _, text in pairs]
    expect_pass = [expected is None for expected, _ in pairs]
    config = RustConfig(jobs=jobs)
    kinds = {"declarations": [i for i, e in enumerate(expect_pass) if e],
             "mutants": [i for i, e in enumerate(expect_pass) if not e]}

    solo_oracle = RustOracle(config)
    slices = [range(n)[k::repeats] for k in range(repeats)]
    solo_verdicts, solo_times = {}, {}
    batched_times: list[float] = []
    kind_times: dict[str, list[float]] = {k: [] for k in kinds}

    def timed_solo(i):
        start = time.perf_counter()
        verdict = solo_oracle.check_solo(candidates[i])
        return verdict, time.perf_counter() - start

    solo_s = 0.0
    for k in range(repeats):
        seconds, batched, oracle = _batched(candidates, expect_pass, config)
        batched_times.append(seconds)
        stats = oracle.stats
        for kind, idx in kinds.items():
            kind_times[kind].append(_batched([candidates[i] for i in idx], [expect_pass[i] for i in idx], config)[0])
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for i, (verdict, seconds) in zip(slices[k], pool.map(timed_solo, slices[k])):
                solo_verdicts[i], solo_times[i] = verdict, seconds
        solo_s += time.perf_counter() - start
    solo = [solo_verdicts[i] for i in range(n)]

    unhinted_s, unhinted_verdicts, _ = _batched(candidates, None, config)
    batched_s = statistics.median(batched_times)
    identical = all(b.same_result(s) and u.same_result(s) for b, u, s in zip(batched, unhinted_verdicts, solo))
    # Per-kind solo time: each candidate's own solo wall time, scaled to the measured total.
    scale = solo_s / sum(solo_times.values())
    streams = {}
    for kind, idx in kinds.items():
        kind_solo = scale * sum(solo_times[i] for i in idx)
        kind_batched = statistics.median(kind_times[kind])
        streams[kind] = {"n": len(idx), "batched_s": round(kind_batched, 4), "solo_s": round(kind_solo, 4),
                         "ratio": round(kind_solo / kind_batched, 2)}
    return {
        "n": n,
        "batched_s": round(batched_s, 4),
        "solo_s": round(solo_s, 4),
        "ratio": round(solo_s / batched_s, 2),
        "identical": identical,
        "jobs": jobs,
        "streams": streams,
        "ratio_without_hints": round(solo_s / unhinted_s, 2),
        "batched_runs_s": [round(t, 4) for t in batched_times],
        "batched_ms_per_candidate": round(1000 * batched_s / n, 3),
        "solo_ms_per_candidate": round(1000 * solo_s / n, 3),
        "failing": sum(not s.passed for s in solo),
        "checked_alone_by_screen": sum(stats.solo_reasons.values()),
        "rustc_runs_batched": stats.compiler_runs,
        "toolchain": solo_oracle.toolchain,
    }
