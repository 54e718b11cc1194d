"""`make demo`: the offline job on the bundled examples. Spends nothing, needs no network.

Today that job is: check the example crate in place (and run its tests), extract its
declarations with their context and check each as a standalone file, check a batch of
standalone candidates in one rustc call and show that each verdict equals checking it alone,
and check the Vox examples with the user's `vox`.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from synth.cli.oracle_samples import covering_candidates
from oracles.cargo.oracle import CargoOracle, Splice
from oracles.rustc.oracle import RustOracle
from oracles.errors import ToolchainMissing
from oracles.verdict import Candidate
from oracles.vox.oracle import VoxOracle
from oracles.settings import OracleSettings
from synth.extract.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.model import standalone_source
from synth.rows.jsonl import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_demo(vox_binary: str = "vox", cache=None) -> int:
    from synth.cli.render import print_mutate

    console = Console(highlight=False)
    ok = True

    console.rule("1. The example crate, checked in place (cargo check / cargo test, offline, sandboxed)")
    crate = CargoOracle(cache=cache)
    whole = Splice(str(EXAMPLES / "rust"), "src/lib.rs", 0, 0, "")
    checked, tested = crate.check([whole])[0], crate.test([whole])[0]
    console.print(f"examples/rust: check {'passed' if checked.passed else 'FAILED'}, "
                  f"tests {tested.tests.passed}/{tested.tests.total} passed  ({escape(crate.toolchain)})")
    ok &= checked.passed and tested.passed

    console.rule("2. Declarations extracted from examples/ (Rust: tree-sitter; Vox: structural parser)")
    extracted = extract_paths([EXAMPLES], ExtractOptions())
    out = ROOT / "cache" / "demo" / "declarations.jsonl"
    write_jsonl(out, extracted.declarations)
    summary = extracted.summary()
    kinds = ", ".join(f"{n} {k}" for k, n in summary["by_lang_kind"].items())
    console.print(f"{summary['declarations']} declarations ({escape(kinds)}) -> {out.relative_to(ROOT)}; "
                  f"left out: {summary['declarations_left_out'] or 'nothing'}")
    rust = [d for d in extracted.declarations if d.lang == "rust"]
    stub_oracle = RustOracle(OracleSettings(jobs=2), cache=cache)
    stubs = stub_oracle.check([Candidate.of(standalone_source(d)) for d in rust])
    console.print(f"each Rust declaration with its context stub, as a standalone file: "
                  f"{sum(v.passed for v in stubs)}/{len(stubs)} compile ({stub_oracle.stats.compiler_runs} rustc runs)")
    ok &= all(v.passed for v in stubs)
    sample = next(d for d in rust if d.name == "lcm")
    console.print(f"[dim]context of `{sample.name}` ({sample.path}):[/]")
    console.print(escape(sample.context.rstrip()))

    console.rule("3. Repair rows: AST mutants the compiler rejects (`synth mutate`: a run with only the repair lane)")
    run_dir = ROOT / "cache" / "demo" / "run"
    run = _synth("mutate", str(EXAMPLES / "rust"), "--out", str(run_dir), "--cache-dir", str(ROOT / "cache"), "--json")
    print_mutate(run)
    codes = json.loads(Path(run["paths"]["stats"]).read_text())["diagnostic_codes"]
    console.print(f"{len(codes)} distinct diagnostic codes; rows -> {', '.join(run['paths']['rows'])}, "
                  f"rejected mutants by kind in rejected/, the snapshot (train/val, split by answer) in snapshots/")
    ok &= len([c for c in codes if c != "syntax"]) >= 10

    console.rule("4. The batched Rust oracle on awkward candidates (crate-level items, syntax errors, aborts)")
    pairs = covering_candidates()
    candidates = [Candidate.of(text) for _, text in pairs]
    oracle = RustOracle(OracleSettings(jobs=2))  # no cache here: the demo shows the compiler at work
    start = time.perf_counter()
    verdicts = oracle.check(candidates)
    batched_s = time.perf_counter() - start
    start = time.perf_counter()
    solo = [oracle.check_solo(c) for c in candidates]
    solo_s = time.perf_counter() - start
    same = sum(b.same_result(s) for b, s in zip(verdicts, solo))
    console.print(f"{len(candidates)} candidates: {sum(v.passed for v in verdicts)} pass, "
                  f"{sum(not v.passed for v in verdicts)} rejected; {oracle.stats.batch_runs} batched rustc runs, "
                  f"{sum(oracle.stats.solo_reasons.values())} checked alone by the syntax screen.")
    console.print(f"Every batched verdict equals checking alone: {same}/{len(candidates)} "
                  f"(batched {batched_s:.2f}s vs one call each {solo_s:.2f}s)")
    ok &= same == len(candidates)

    console.rule("5. Vox examples (`vox check --format json`)")
    try:
        vox = VoxOracle(OracleSettings(vox=vox_binary), cache=cache)
    except ToolchainMissing as exc:
        console.print(f"skipped: {escape(str(exc))}. The Vox oracle runs your own `vox`; none is bundled.")
    else:
        files = sorted((EXAMPLES / "vox").glob("*.vox"))
        for path, verdict in zip(files, vox.check([Candidate.of(p.read_text()) for p in files])):
            console.print(f"{path.relative_to(ROOT)}: {'passed' if verdict.passed else 'FAILED'} "
                          f"({escape(verdict.toolchain)})")
            ok &= verdict.passed

    console.rule("6. The front door: `synth plan` and `synth run` on examples/synth.toml (cap $0)")
    # Run as a user would, through the command line (JSON out).
    config = str(EXAMPLES / "synth.toml")
    plan = _synth("plan", "--config", config, "--max-spend", "5", "--json")
    for row in plan["stages"]:
        console.print(f"plan under a $5 cap: {row['stage']:>13}: {row['items']} items, {row['calls']:g} calls, "
                      f"expected ${row['expected_cost_usd']:.4f} (worst ${row['worst_case_usd']:.4f}), "
                      f"~{row['expected_rows']:.0f} rows")
    console.print(f"plan total: expected ${plan['total']['expected_cost_usd']:.4f}, worst case "
                  f"${plan['total']['worst_case_usd']:.4f}; nothing was called to find out")
    summary = _synth("run", "--config", config, "--json")  # the config's cap: $0
    for name, lane in summary["stages"].items():
        console.print(f"run: {name}: {lane['items']} items ({lane['reused']} reused) -> {lane['rows']} rows")
    for name, why in summary["skipped"].items():
        console.print(f"run: {name}: skipped ({escape(why)})")
    console.print(f"snapshot -> {escape(summary['snapshot'])}; spent ${summary['spent_usd']:.2f}; "
                  f"`synth report {escape(summary['out'])}` draws it")
    ok &= summary["spent_usd"] == 0 and summary["stages"].get("repair", {}).get("rows", 0) > 0

    console.rule()
    console.print("demo ok: every verdict above came from a real compiler; nothing was spent." if ok
                  else "[red]demo found a problem (see above)[/]")
    return 0 if ok else 1


def _synth(*args: str) -> dict:
    """`synth ARGS` in a child process; its JSON summary (the last line printed)."""
    done = subprocess.run([sys.executable, "-m", "synth.cli.main", *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):  # 1: something needs attention (e.g. no `vox`), said in the summary
        raise RuntimeError(f"synth {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
