"""`make demo`: the offline job on the bundled examples. Spends nothing, needs no network.

Today that job is the oracle layer every later stage stands on: check the example crate in
place (and run its tests), check a batch of standalone candidates in one rustc call and show
that each verdict equals checking it alone, and check the Vox examples with the user's `vox`.
"""
from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmarks.rust_candidates import covering_candidates
from oracles.crate import CrateOracle, Splice
from oracles.rust import RustConfig, RustOracle
from oracles.toolchain import ToolchainMissing
from oracles.verdict import Candidate
from oracles.vox import VoxConfig, VoxOracle

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run_demo(vox_binary: str = "vox", cache=None) -> int:
    console = Console(highlight=False)
    ok = True

    console.rule("1. The example crate, checked in place (cargo check / cargo test, offline, sandboxed)")
    crate = CrateOracle(cache=cache)
    whole = Splice(str(EXAMPLES / "rust"), "src/lib.rs", 0, 0, "")
    checked, tested = crate.check([whole])[0], crate.test([whole])[0]
    console.print(f"examples/rust: check {'passed' if checked.passed else 'FAILED'}, "
                  f"tests {tested.tests.passed}/{tested.tests.total} passed  ({escape(crate.toolchain)})")
    ok &= checked.passed and tested.passed

    console.rule("2. Standalone candidates, batched into one rustc call each group")
    pairs = covering_candidates()
    candidates = [Candidate.of(text) for _, text in pairs]
    oracle = RustOracle(RustConfig(jobs=2))  # no cache here: the demo shows the compiler at work
    start = time.perf_counter()
    verdicts = oracle.check(candidates)
    batched_s = time.perf_counter() - start
    table = Table("candidate (first line)", "verdict", "first diagnostic", "how")
    for cand, verdict in list(zip(candidates, verdicts))[::4]:
        first = verdict.diagnostics[0].render().splitlines()[0] if verdict.diagnostics else ""
        table.add_row(escape(cand.text.splitlines()[0][:48]), "pass" if verdict.passed else "[red]reject[/]",
                      escape(first[:70]), verdict.mode)
    console.print(table)
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

    console.rule("3. Vox examples (`vox check --format json`)")
    try:
        vox = VoxOracle(VoxConfig(binary=vox_binary), cache=cache)
    except ToolchainMissing as exc:
        console.print(f"skipped: {escape(str(exc))}. The Vox oracle runs your own `vox`; none is bundled.")
    else:
        files = sorted((EXAMPLES / "vox").glob("*.vox"))
        for path, verdict in zip(files, vox.check([Candidate.of(p.read_text()) for p in files])):
            console.print(f"{path.relative_to(ROOT)}: {'passed' if verdict.passed else 'FAILED'} "
                          f"({escape(verdict.toolchain)})")
            ok &= verdict.passed

    console.rule()
    console.print("demo ok: every verdict above came from a real compiler; nothing was spent." if ok
                  else "[red]demo found a problem (see above)[/]")
    return 0 if ok else 1
