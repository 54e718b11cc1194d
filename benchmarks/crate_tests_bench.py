"""`synth bench crate-tests`: a crate's own test suite as the judge runs it (`[eval] crate_tests`),
on one thread and on `jobs` threads, side by side: each repeat runs both, one after the other,
in fresh copies (build and suite; no cache). Default crates: the loop's held-out crates whose
suites build here (aho-corasick, semver, cc)."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

REGISTRY = Path("/usr/share/cargo/registry")
LOOP_CRATES = ("aho-corasick-0.7.19", "semver-1.0.14", "cc-1.0.73")


def run_crate_tests_bench(crates: list[Path], repeats: int = 3, jobs: int = 2) -> dict:
    from oracles.settings import OracleSettings
    from oracles.verdict import Splice
    from oracles.factory import crate_tests_oracle
    oracles = {threads: crate_tests_oracle(OracleSettings(jobs=threads)) for threads in (1, jobs)}  # the judge's, no cache
    out = {}
    for crate in crates:
        seconds: dict[int, list[float]] = {threads: [] for threads in oracles}
        tests = {}
        for _ in range(repeats):
            for threads, oracle in oracles.items():
                start = time.perf_counter()
                (verdict,) = oracle.test([Splice(str(crate), "src/lib.rs", 0, 0, "")])
                seconds[threads].append(time.perf_counter() - start)
                tests[threads] = (verdict.passed, verdict.tests.total if verdict.tests else 0)
        one, many = statistics.median(seconds[1]), statistics.median(seconds[jobs])
        out[crate.name] = {"tests": tests[jobs][1], "passed": {str(t): p for t, (p, _) in tests.items()},
                           "one_thread_s": round(one, 2), f"{jobs}_threads_s": round(many, 2),
                           "ratio": round(one / many, 2)}
    return {"jobs": jobs, "repeats": repeats, "crates": out}


def bench(args) -> dict:
    """`synth bench crate-tests [--crates PATH...] [--repeats N] [--jobs N]`."""
    crates = [Path(c) for c in args.crates] if args.crates else [REGISTRY / name for name in LOOP_CRATES]
    return run_crate_tests_bench(crates, repeats=args.repeats if args.repeats != 5 else 3, jobs=args.jobs or 2)
