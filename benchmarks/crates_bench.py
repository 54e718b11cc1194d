"""`synth bench crates`: the repair stage over the pinned real-crate corpus (benchmarks/real_crates.txt).

Prints the share of eligible declarations with a verified original (standalone vs in the crate),
repair rows per eligible declaration, wall time per MB of source, compiler invocations per
verified candidate, and a per-crate funnel (also written to the run's stats/). Side by side on a
seeded sample of in-crate mutants: the batched verdicts against one check per mutant (verdicts
and diagnostics identical, and the time ratio). Then a seeded sample of crate rows is checked
again from what each row records, in a fresh oracle with no cache.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import time
from pathlib import Path

from benchmarks.row_quality import crate_check_counts, row_counts
from oracles.cargo.crate import CargoCrateOracle
from oracles.cargo.workdir import DEBIAN_REGISTRY
from oracles.rustc.oracle import RustOracle
from oracles.verdict import Splice, Verdict
from oracles.settings import OracleSettings
from synth.extract.extract import ExtractOptions, extract_paths
from synth.rows.jsonl import write_json
from synth.lanes.repair import mark_compiler_solvable
from synth.lanes.base import LaneOutput
from synth.mutate.repair import SOLVABLE_CAP, RepairSettings, eligible_declarations, mix, repair_rows
from synth.pipeline.run import write_outputs
from synth.rows.pack import write_packed

CORPUS_LIST = Path(__file__).with_name("real_crates.txt")
# Issue 18 writes row-quality counters (unique ids, ...): add them here, fed the run's rows.


def corpus_crates(registry: str = DEBIAN_REGISTRY, listing: Path = CORPUS_LIST) -> list[Path]:
    """The registry folders of the pinned packages (librust-NAME-dev -> NAME-VERSION)."""
    folders = sorted(Path(registry).iterdir()) if Path(registry).is_dir() else []
    out = []
    for line in listing.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = re.sub(r"^librust-|-dev$", "", line).replace("-", "_")
        found = [f for f in folders if re.match(r"(.*?)-\d", f.name) and
                 re.match(r"(.*?)-\d", f.name).group(1).replace("-", "_") == name]
        if found:
            out.append(found[-1])
    return out


def recheck_row(row: dict, registry: str = DEBIAN_REGISTRY, crate_dir: Path | None = None) -> dict:
    """Check a crate row again from what it records, fresh (new scratch copy, no cache): the fixed
    declaration must pass and the broken one fail with the same diagnostics. The crate is looked
    up in `registry` by name and version (or given as `crate_dir`)."""
    recipe = row["verification"]["crate"]
    crate_dir = crate_dir or Path(registry) / f"{recipe['name']}-{recipe['version']}"
    oracle = CargoCrateOracle(cache=None)
    try:
        features = tuple(recipe.get("extra_features", ()))  # those it was verified with, besides the default
        if oracle.facts(str(crate_dir), features).get("crate_hash") != recipe["crate_hash"]:
            return {"agree": False, "why": "crate content differs from the recorded one"}
        splice = lambda text: Splice(str(crate_dir), recipe["path"], recipe["start_byte"], recipe["end_byte"], text,  # noqa: E731
                                     features)
        fixed, broken = oracle.check_solo(splice(row["fixed"])), oracle.check_solo(splice(row["broken"]))
    finally:
        oracle.close()
    recorded = Verdict(candidate_id="", oracle="", toolchain="", **{
        k: row["broken_verification"][k] for k in ("passed", "diagnostics")})
    same = [d.without_fixes() for d in broken.diagnostics] == recorded.diagnostics  # rows keep no fixes
    agree = fixed.passed and not broken.passed and same
    return {"agree": agree, "fixed_passed": fixed.passed, "broken_same": same}


def run_crates_bench(seed: int = 0, sample: int = 300, recheck: int = 50, out: str | None = None,
                     crates: list[Path] | None = None, in_crate: str = "always") -> dict:
    crates = crates or corpus_crates()
    out_dir = Path(out or "runs/bench-crates")
    start = time.monotonic()
    decls = extract_paths([str(c) for c in crates], ExtractOptions()).declarations
    eligible = eligible_declarations(decls, "rust")
    source_bytes = sum(p.stat().st_size for c in crates for p in c.rglob("*.rs") if "target" not in p.parts)
    rust = RustOracle(OracleSettings(jobs=1))
    crate = CargoCrateOracle(cache=None)
    crate.keep_checks = True
    result = repair_rows(decls, rust, RepairSettings(in_crate=in_crate), seed, crate_oracle=crate,
                         solvable=mark_compiler_solvable)
    wall = time.monotonic() - start
    floors = [copy.floor_s() for copy in crate.copies(helpers=True)]  # bare rustc on the same copies and checks, one at a time
    floor, side = sum(floors), makespan(floors, crate.workers)  # ... and side by side on the oracle's workers
    # the engine is driven here, not through `synth run`, for what a run hides (each crate's funnel, the
    # checks in their copies); its rows and rejections are written as a run writes them
    write_outputs(out_dir, {"repair": LaneOutput("repair", rows=result.rows, rejected=result.rejected)})
    capped = [r for r in result.rejected if r.kind == SOLVABLE_CAP]
    summary = {"rows": len(result.rows), "mix": mix(result.rows, capped)}
    funnel = result.funnel
    n_eligible = len(eligible)
    standalone = sum(f["verified_standalone"] for f in funnel.values())
    verified_crate = sum(f["verified_crate"] for f in funnel.values())
    runs = rust.stats.compiler_runs + crate.stats.compiler_runs
    compiled = rust.stats.candidates_compiled + crate.stats.candidates_compiled
    figures = {
        "crates": len(crates), "in_crate": in_crate, "eligible": n_eligible,
        "eligible_fn_method": sum(d.kind in ("fn", "method") for d in eligible),
        "verified_original_share": round((standalone + verified_crate) / max(1, n_eligible), 4),
        "verified_standalone": standalone, "verified_crate": verified_crate,
        # verified means compiled: a probe check saw each one in its crate (the default features or others)
        "configured_out": sum(f["configured_out"] for f in funnel.values()),
        "rows_with_features": sum(1 for r in result.rows if (r.verification.crate or {}).get("extra_features")),
        "feature_sets_checked": sum(len(f["feature_sets"]) for f in funnel.values()),
        "rows": len(result.rows), "rows_per_eligible": round(len(result.rows) / max(1, n_eligible), 3),
        # rows the compiler's own help (best_free) already fixes, and the kinds of error they teach
        "compiler_solvable": summary["mix"]["compiler_solvable"],
        "compiler_solvable_share": round(summary["mix"]["compiler_solvable"] / max(1, len(result.rows)), 4),
        "capped_solvable": len(capped),
        "compiler_solvable_share_before_cap": round((summary["mix"]["compiler_solvable"] + len(capped)) /
                                                    max(1, len(result.rows) + len(capped)), 4),
        "distinct_primary_codes": len([c for c in summary["mix"]["by_code"] if c != "syntax"]),
        "mix": summary["mix"],
        "rows_sha256": hashlib.sha256((out_dir / "rows" / "repair.jsonl.zst").read_bytes()).hexdigest(),
        "row_file_kb_per_row": row_file_sizes(result.rows, out_dir / "rows" / "repair.jsonl.zst"),
        "wall_s": round(wall, 1), "source_mb": round(source_bytes / 1e6, 3),
        "wall_s_per_mb": round(wall / max(1e-9, source_bytes / 1e6), 1),
        # bare rustc (no sandbox, no Python) on the very copies and checks the oracle made; the
        # oracle's own cargo/rustc runs; and all of the stage (extraction included) over that floor
        "rustc_floor_s": round(floor, 1), "oracle_runs_s": round(crate.stats.elapsed_s, 1),
        "overhead_over_floor": round(wall / max(1e-9, floor), 2),
        # the same per-copy floors on the oracle's workers (longest first, each to the first free
        # one): what the checks alone would take side by side, with no Python and no extraction
        "rustc_floor_workers": crate.workers, "rustc_floor_side_by_side_s": round(side, 1),
        "side_by_side_floor_s_per_mb": round(side / max(1e-9, source_bytes / 1e6), 1),
        "overhead_over_side_by_side_floor": round(wall / max(1e-9, side), 2),
        "compiler_runs": runs, "candidates_compiled": compiled,
        "compiler_runs_per_candidate": round(runs / max(1, compiled), 3),
        "crate_oracle": vars(crate.stats),
        # issue 18's counts: unique ids, no test code, impl headers, help text once, crate checks
        "row_quality": {**row_counts([r.model_dump(mode="json") for r in result.rows], crates),
                        **crate_check_counts(crates)},
    }
    figures["side_by_side"] = side_by_side(crate, seed, sample, result)
    crate.close()
    crate_rows = [json.loads(r.model_dump_json()) for r in result.rows if r.verification.scope == "crate"]
    picked = random.Random(seed).sample(crate_rows, min(recheck, len(crate_rows)))
    rechecks = [recheck_row(r) for r in picked]
    figures["recheck"] = {"rows": len(rechecks), "disagreements": sum(not r["agree"] for r in rechecks)}
    write_json(out_dir / "stats" / "crates.json", {**figures, "funnel": funnel, "repair": summary["rows"]})
    figures["funnel"] = funnel
    figures["identical"] = figures["side_by_side"]["identical"] and figures["recheck"]["disagreements"] == 0
    return figures


def row_file_sizes(rows, written: Path) -> dict:
    """KB a row of these rows: as written (whole rows, zstd), in the packed format synth wrote
    before (each context once per file; written beside it, then removed) and as plain JSON lines."""
    packed = written.with_name("packed.jsonl")
    write_packed(packed, rows)
    sizes = {"zstd": written.stat().st_size, "packed": packed.stat().st_size,
             "whole": sum(len(r.model_dump_json().encode()) + 1 for r in rows)}
    packed.unlink()
    return {name: round(size / max(1, len(rows)) / 1e3, 2) for name, size in sizes.items()}


def makespan(seconds: list[float], workers: int) -> float:
    """The wall time of jobs taking `seconds` on `workers`, longest first, each to the first free worker."""
    loads = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        loads[loads.index(min(loads))] += s
    return max(loads)


def side_by_side(crate: CargoCrateOracle, seed: int, sample: int, result) -> dict:
    """A seeded sample of the stage's in-crate mutants: the stage's batched verdicts against one
    check per mutant (fresh oracle, no cache); time per candidate of each, both without the one
    check of each crate as it is (its dependencies built) that either needs first."""
    pairs = result.checked_in_crate
    picked = random.Random(seed + 1).sample(range(len(pairs)), min(sample, len(pairs)))
    fresh = CargoCrateOracle(OracleSettings(jobs=1), cache=None, direct=False)  # the reference: cargo, one check each
    for copy in sorted({pairs[i][1].splice.copy for i in picked}):
        fresh.original(*copy)
    solo = [fresh.check_solo(pairs[i][1].splice) for i in picked]
    fresh.close()
    differ = [i for i, s in zip(picked, solo) if not pairs[i][0].verdict.same_result(s)]
    per_batched = (crate.stats.elapsed_s - crate.stats.setup_s) / max(1, len(pairs))
    per_solo = (fresh.stats.elapsed_s - fresh.stats.setup_s) / max(1, len(picked))
    return {"candidates": len(picked), "stage_candidates": len(pairs), "batched_s_per_candidate": round(per_batched, 4),
            "solo_s_per_candidate": round(per_solo, 4), "ratio": round(per_solo / max(1e-9, per_batched), 2),
            "setup_s": {"batched": round(crate.stats.setup_s, 1), "solo": round(fresh.stats.setup_s, 1)},
            "differ": len(differ), "identical": not differ,
            "examples": [{"operator": pairs[i][0].operator, "path": pairs[i][1].splice.path,
                          "batched": [d.render() for d in pairs[i][0].verdict.diagnostics][:4],
                          "solo": [d.render() for d in s.diagnostics][:4]}
                         for i, s in zip(picked, solo) if i in differ[:5]]}


def bench(args) -> dict:
    """`synth bench crates`."""
    return run_crates_bench(seed=args.seed, sample=args.n if args.n != 500 else 300, out=args.out,
                            crates=[Path(c) for c in args.crates] if args.crates else None, in_crate=args.in_crate)
