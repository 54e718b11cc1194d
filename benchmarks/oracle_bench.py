"""`synth bench oracle`: batched vs one-rustc-per-candidate, side by side in one run.

The same candidates are checked (1) batched, `repeats` times with a fresh oracle and no cache
(median reported), and (2) one sandboxed rustc call per candidate, the two interleaved so both
see the same moments of this shared machine. Both sides use the same number of workers, so the
ratio is the batching alone. `identical` says whether every batched verdict equals the solo one.
`isolation` (where bubblewrap runs): the same mix batched under bwrap and under unshare, and its
`overhead`.

Two streams:
- the headline (`n` candidates): small template declarations and compile-level mutants (60/40),
  each with the pass/fail expectation its stage knows. The ratio depends on the mix (rustc spends
  ~0.1 ms on a small clean function, ~2.5 ms on a failed method lookup), so `streams` gives it per
  kind, and `ratio_without_hints` for a stream of unknown candidates (e.g. LLM samples);
- `pipeline`: what the repair stage really sends for `examples/rust` (each declaration in its
  standalone file, context included, then its mutants). Every candidate there carries ~30 lines
  that rustc must check, so the ratio is lower: the figure a user of the stage sees.
"""
from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.fixtures.pipeline_candidates import pipeline_candidates
from synth.cli.oracle_samples import rust_candidates
from oracles.rustc.oracle import RustOracle, RustcSettings
from oracles.isolation.sandbox import Sandbox, bwrap_available, namespaces_available
from oracles.verdict import Candidate
from oracles.settings import OracleSettings

EXAMPLE_CRATE = Path(__file__).resolve().parent.parent / "examples" / "rust"


def _batched(candidates, expect_pass, config, sandbox: Sandbox | None = None,
             record: bool = False, tuning: RustcSettings | None = None) -> tuple[float, list, RustOracle]:
    oracle = RustOracle(config, sandbox=sandbox, tuning=tuning)
    oracle.recorded = [] if record else None
    start = time.perf_counter()
    verdicts = oracle.check(candidates, expect_pass=expect_pass)
    return time.perf_counter() - start, verdicts, oracle


def rustc_floor(oracle: RustOracle, jobs: int) -> float:
    """Wall time of bare rustc over exactly the files `oracle` compiled (same flags, `jobs` wide)."""
    def one(item) -> None:
        source, file_name, crate_type = item
        with tempfile.TemporaryDirectory() as wd:
            (Path(wd) / file_name).write_text(source)
            subprocess.run(oracle.check_argv(file_name, crate_type), cwd=wd, capture_output=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, oracle.recorded or []))
    return time.perf_counter() - start


def _side_by_side(candidates: list[Candidate], expect_pass: list[bool], repeats: int, jobs: int,
                  kinds: dict[str, list[int]] | None = None,
                  variants: dict[str, RustcSettings] | None = None) -> tuple[dict, list]:
    """Batched (median of `repeats`) and solo over the same candidates, interleaved: each round
    checks the whole batch (and each variant configuration of the batched oracle), then one slice
    of the candidates alone. Returns the figures and the solo verdicts; `identical` covers the
    variants too."""
    config = OracleSettings(jobs=jobs)
    n = len(candidates)
    solo_oracle = RustOracle(config)
    slices = [range(n)[k::repeats] for k in range(repeats)]
    solo_verdicts, solo_times = {}, {}
    batched_times: list[float] = []
    kinds = kinds or {}
    kind_times: dict[str, list[float]] = {k: [] for k in kinds}
    variants = variants or {}
    variant_times: dict[str, list[float]] = {name: [] for name in variants}
    variant_verdicts: dict[str, list] = {}

    def timed_solo(i):
        start = time.perf_counter()
        verdict = solo_oracle.check_solo(candidates[i])
        return verdict, time.perf_counter() - start

    solo_s = 0.0
    for k in range(repeats):
        seconds, batched, oracle = _batched(candidates, expect_pass, config, record=k == repeats - 1)
        batched_times.append(seconds)
        for kind, idx in kinds.items():
            kind_times[kind].append(_batched([candidates[i] for i in idx], [expect_pass[i] for i in idx], config)[0])
        for name, variant in variants.items():
            seconds, variant_verdicts[name], _ = _batched(candidates, expect_pass, config, tuning=variant)
            variant_times[name].append(seconds)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for i, (verdict, seconds) in zip(slices[k], pool.map(timed_solo, slices[k])):
                solo_verdicts[i], solo_times[i] = verdict, seconds
        solo_s += time.perf_counter() - start
    solo = [solo_verdicts[i] for i in range(n)]
    batched_s = statistics.median(batched_times)
    result = {
        "n": n,
        "batched_s": round(batched_s, 4),
        "solo_s": round(solo_s, 4),
        "ratio": round(solo_s / batched_s, 2),
        "identical": all(v.same_result(s) for vs in [batched, *variant_verdicts.values()] for v, s in zip(vs, solo)),
        "batched_runs_s": [round(t, 4) for t in batched_times],
        "batched_ms_per_candidate": round(1000 * batched_s / n, 3),
        "solo_ms_per_candidate": round(1000 * solo_s / n, 3),
        "failing": sum(not s.passed for s in solo),
        "checked_alone_by_screen": sum(oracle.stats.solo_reasons.values()),
        "rechecked_alone": oracle.stats.contaminated,
        "bisections": oracle.stats.bisections,
        "early_stops": oracle.stats.early_stops,
        "rustc_runs_batched": oracle.stats.compiler_runs,
        "toolchain": solo_oracle.toolchain,
    }
    floor_s = rustc_floor(oracle, jobs)
    result["rustc_floor_s"] = round(floor_s, 4)  # the same files, bare rustc: no Python, no sandbox
    result["overhead_over_floor"] = round(batched_s / max(1e-9, floor_s), 2)
    if kinds:
        # Per-kind solo time: each candidate's own solo wall time, scaled to the measured total.
        scale = solo_s / sum(solo_times.values())
        result["streams"] = {}
        for kind, idx in kinds.items():
            kind_solo = scale * sum(solo_times[i] for i in idx)
            kind_batched = statistics.median(kind_times[kind])
            result["streams"][kind] = {"n": len(idx), "batched_s": round(kind_batched, 4),
                                       "solo_s": round(kind_solo, 4), "ratio": round(kind_solo / kind_batched, 2)}
    for name, times in variant_times.items():
        result[name] = {"batched_s": round(statistics.median(times), 4),
                        "ratio": round(solo_s / statistics.median(times), 2)}
    return result, solo


def _isolation_overhead(candidates: list[Candidate], expect_pass: list[bool], repeats: int, jobs: int,
                        solo_n: int = 20) -> dict:
    """The template mix batched under bubblewrap and under plain `unshare`, interleaved (the order
    alternating per round), medians; plus `solo_n` candidates one rustc call each, the per-call
    price. `overhead` = bwrap / unshare - 1 on the batched mix."""
    config = OracleSettings(jobs=jobs)
    sandboxes = {name: Sandbox(isolation=name) for name in ("bwrap", "unshare")}
    times: dict[str, list[float]] = {name: [] for name in sandboxes}
    verdicts: dict[str, list] = {}
    solo: dict[str, list[float]] = {name: [] for name in sandboxes}
    for k in range(repeats):
        for name in sorted(sandboxes, reverse=k % 2 == 1):
            seconds, verdicts[name], _ = _batched(candidates, expect_pass, config, sandboxes[name])
            times[name].append(seconds)
    for cand in candidates[:min(solo_n, max(1, len(candidates) // 8))]:
        for name, sandbox in sandboxes.items():
            oracle = RustOracle(config, sandbox=sandbox)
            start = time.perf_counter()
            oracle.check_solo(cand)
            solo[name].append(time.perf_counter() - start)
    bwrap_s, unshare_s = statistics.median(times["bwrap"]), statistics.median(times["unshare"])
    return {"bwrap_s": round(bwrap_s, 4), "unshare_s": round(unshare_s, 4),
            "overhead": round(bwrap_s / unshare_s - 1, 4),
            "identical": all(a.same_result(b) for a, b in zip(verdicts["bwrap"], verdicts["unshare"])),
            "solo_ms_bwrap": round(1000 * statistics.median(solo["bwrap"]), 2),
            "solo_ms_unshare": round(1000 * statistics.median(solo["unshare"]), 2)}


def run_oracle_bench(n: int = 500, seed: int = 0, repeats: int = 5, jobs: int = 1, pipeline: bool = True,
                     crates: list[Path] | None = None, isolation: bool = True) -> dict:
    """`crates`: where the pipeline stream comes from (default examples/rust); any Rust sources work,
    e.g. Debian's crate sources (`apt install librust-semver-dev` -> /usr/share/cargo/registry/).
    `isolation`: also the template mix under bubblewrap beside plain `unshare` (the `isolation` key)."""
    pairs = rust_candidates(n, seed=seed, special_share=0.0, typed_only=True)
    candidates = [Candidate.of(text) for _, text in pairs]
    expect_pass = [expected is None for expected, _ in pairs]
    kinds = {"declarations": [i for i, e in enumerate(expect_pass) if e],
             "mutants": [i for i, e in enumerate(expect_pass) if not e]}
    result, solo = _side_by_side(candidates, expect_pass, repeats, jobs, kinds)

    unhinted_s, unhinted, _ = _batched(candidates, None, OracleSettings(jobs=jobs))
    result["identical"] = result["identical"] and all(u.same_result(s) for u, s in zip(unhinted, solo))
    result["ratio_without_hints"] = round(result["solo_s"] / unhinted_s, 2)
    result["jobs"] = jobs
    if isolation and bwrap_available() and namespaces_available():
        result["isolation"] = _isolation_overhead(candidates, expect_pass, repeats, jobs)

    if pipeline:
        sources = crates or [EXAMPLE_CRATE]
        stream = pipeline_candidates(sources)
        # Real crates hold candidates whose errors make rustc give up early; the same oracle
        # without that hint (plain bisection) runs beside it.
        plain = {"without_stop_hint": RustcSettings(stopping_codes=())}
        measured, _ = _side_by_side([Candidate.of(t) for _, t in stream], [e for e, _ in stream], repeats, jobs,
                                    variants=plain)
        keep = ("n", "batched_s", "solo_s", "ratio", "identical", "batched_ms_per_candidate",
                "solo_ms_per_candidate", "failing", "rechecked_alone", "rustc_runs_batched", "bisections", "early_stops",
                "without_stop_hint", "rustc_floor_s", "overhead_over_floor")
        result["pipeline"] = {k: measured[k] for k in keep}
        result["pipeline"]["sources"] = [str(p) for p in sources]
        result["identical"] = result["identical"] and measured["identical"]
    return result


def bench(args) -> dict:
    """`synth bench oracle`."""
    from pathlib import Path
    if getattr(args, "executor", "local") == "ray":
        from benchmarks.executor_bench import ray_side_by_side
        pairs = rust_candidates(args.n, seed=args.seed, special_share=0.0, typed_only=True)
        return ray_side_by_side([Candidate.of(text) for _, text in pairs], [e is None for e, _ in pairs],
                                args.repeats, args.jobs or 2, args.ray_address)
    return run_oracle_bench(n=args.n, seed=args.seed, repeats=args.repeats, jobs=args.jobs or 1,
                            crates=[Path(c) for c in args.crates] if args.crates else None)
