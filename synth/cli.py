"""`synth` command line. Each verb is a thin shell over plain functions; `--json` on each."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED = 0, 1, 2, 3
DEFAULT_CACHE = Path("cache") / "verdicts"


class UsageError(Exception):
    """Bad arguments or configuration: exit status 2 with a message."""


def _open_cache(args):
    if args.no_cache:
        return None
    from oracles.cache import VerdictCache
    return VerdictCache(args.cache_dir)


def _lang_of(path: Path, forced: str | None) -> str:
    if forced:
        return forced
    if path.suffix == ".vox":
        return "vox"
    if path.suffix == ".rs" or (path / "Cargo.toml").exists():
        return "rust"
    raise UsageError(f"{path}: cannot tell the language (use --lang rust|vox)")


def check_paths(paths: list[str], lang: str | None, edition: str, vox_binary: str, cache, jobs: int):
    """(path, Verdict) pairs: .rs files as standalone candidates (batched), crate folders in place,
    .vox files through `vox check`."""
    from oracles.crate import CrateOracle, Splice
    from oracles.rust import RustConfig, RustOracle
    from oracles.toolchain import ToolchainMissing
    from oracles.verdict import Candidate
    from oracles.vox import VoxConfig, VoxOracle

    rust_files, crates, vox_files = [], [], []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw}: no such file or directory")
        kind = _lang_of(path, lang)
        if kind == "rust" and path.is_dir():
            if not (path / "Cargo.toml").exists():
                raise UsageError(f"{raw}: a folder must be a crate (no Cargo.toml)")
            crates.append(path)
        elif kind == "rust":
            rust_files.append(path)
        else:
            vox_files.append(path)
    results = []
    try:
        if rust_files:
            oracle = RustOracle(RustConfig(edition=edition, jobs=jobs), cache=cache)
            verdicts = oracle.check([Candidate.of(_read(p)) for p in rust_files])
            results += list(zip(map(str, rust_files), verdicts))
        if crates:
            oracle = CrateOracle(cache=cache)
            lib = lambda c: "src/lib.rs" if (c / "src/lib.rs").exists() else "src/main.rs"  # noqa: E731
            verdicts = oracle.check([Splice(str(c), lib(c), 0, 0, "") for c in crates])
            results += list(zip(map(str, crates), verdicts))
        if vox_files:
            oracle = VoxOracle(VoxConfig(binary=vox_binary, jobs=jobs), cache=cache)
            verdicts = oracle.check([Candidate.of(_read(p)) for p in vox_files])
            results += list(zip(map(str, vox_files), verdicts))
    except ToolchainMissing as exc:
        raise UsageError(str(exc)) from exc
    order = {p: i for i, p in enumerate(paths)}
    return sorted(results, key=lambda pv: order.get(pv[0], 0))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason})") from exc


def cmd_check(args) -> int:
    cache = _open_cache(args)
    results = check_paths(args.files, args.lang, args.edition, args.vox, cache, args.jobs)
    for path, verdict in results:
        if args.json:
            print(json.dumps({
                "path": path, "passed": verdict.passed,
                "diagnostics": [{"code": d.code, "severity": d.severity, "message": d.message,
                                 "line": d.line, "column": d.column, **({"path": d.path} if d.path else {})}
                                for d in verdict.diagnostics],
                "oracle": verdict.oracle, "toolchain": verdict.toolchain, "timed_out": verdict.timed_out,
            }))
        else:
            _print_verdict(path, verdict)
    return EXIT_OK if all(v.passed for _, v in results) else EXIT_FAILED


def _print_verdict(path: str, verdict) -> None:
    from rich.console import Console
    from rich.markup import escape
    console = Console(highlight=False)
    mark = "[green]passed[/]" if verdict.passed else ("[red]timed out[/]" if verdict.timed_out else "[red]failed[/]")
    errors = sum(d.severity == "error" for d in verdict.diagnostics)
    warnings = len(verdict.diagnostics) - errors
    console.print(f"{escape(path)}: {mark} ({errors} errors, {warnings} warnings; {escape(verdict.toolchain)})")
    for d in verdict.diagnostics:
        console.print("  " + escape(d.render()).replace("\n", "\n  "))


def cmd_bench(args) -> int:
    if args.what == "refresh":
        from benchmarks.refresh_bench import run_refresh_bench
        result = run_refresh_bench(n=args.n if args.n != 500 else 300, seed=args.seed)
    elif args.what == "train":
        from benchmarks.train_bench import run_train_bench
        result = run_train_bench(steps=args.steps or 12, repeats=args.repeats, seed=args.seed)
    elif args.what == "oracle":
        from benchmarks.oracle_bench import run_oracle_bench
        for raw in args.crates or []:
            if not Path(raw).exists():
                raise UsageError(f"{raw}: no such file or directory")
        result = run_oracle_bench(n=args.n, seed=args.seed, repeats=args.repeats, jobs=args.jobs or 1,
                                  crates=[Path(c) for c in args.crates] if args.crates else None)
    elif args.what == "loop":
        from benchmarks.loop_bench import run_loop_bench
        for raw in args.heldout or []:
            if not Path(raw).is_dir():
                raise UsageError(f"{raw}: not a crate folder (--heldout takes crate folders)")
        result = run_loop_bench(heldout=args.heldout, seed=args.seed, sft_steps=args.steps or 16, threads=args.jobs)
    else:
        from benchmarks.extract_bench import run_extract_bench
        result = run_extract_bench(mb=args.mb, repeats=min(args.repeats, 3), jobs=args.jobs)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    return EXIT_OK if result.get("identical", True) else EXIT_FAILED


def cmd_extract(args) -> int:
    from synth.extract import extract_paths
    from synth.extract.extract import ExtractOptions
    from synth.jsonl import write_jsonl

    for raw in args.paths:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
    options = ExtractOptions(include_tests=args.include_tests, max_bytes=args.max_bytes, vox_grammar=args.vox_grammar)
    try:
        result = extract_paths(args.paths, options)
    except OSError as exc:  # e.g. a grammar library that cannot be loaded
        raise UsageError(f"cannot load the Vox grammar {args.vox_grammar}: {exc}") from exc
    write_jsonl(args.out, result.declarations)
    summary = {**result.summary(), "out": args.out}
    if args.json:
        print(json.dumps(summary))
        return EXIT_OK
    from rich.console import Console
    from rich.markup import escape
    console = Console(highlight=False)
    console.print(f"read {summary['files_read']} files ({summary['bytes_read']} bytes); "
                  f"{summary['declarations']} declarations -> {escape(args.out)}")
    for key, count in summary["by_lang_kind"].items():
        console.print(f"  {key:<22} {count}")
    for reason, count in summary["declarations_left_out"].items():
        console.print(f"  left out ({reason}): {count}")
    for skip in summary["skipped"]:
        console.print(f"  skipped {escape(skip['path'])}: {escape(skip['reason'])}")
    return EXIT_OK


def cmd_mutate(args) -> int:
    from oracles.rust import RustConfig, RustOracle
    from oracles.toolchain import ToolchainMissing
    from oracles.vox import VoxConfig, VoxOracle
    from synth.extract import extract_paths
    from synth.extract.extract import ExtractOptions
    from synth.mutate.repair import RepairConfig, repair_rows, write_run

    for raw in args.paths:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
    if not 0 < args.max_share <= 1:
        raise UsageError("--max-share must be in (0, 1]")
    extracted = extract_paths(args.paths, ExtractOptions())
    config = RepairConfig(seed=args.seed, max_share=args.max_share, diff=args.diff)
    cache = _open_cache(args)
    results, notes = {}, []
    langs = {d.lang for d in extracted.declarations}
    if "rust" in langs:
        results["rust"] = repair_rows(extracted.declarations, RustOracle(RustConfig(jobs=args.jobs), cache=cache), config)
    if "vox" in langs:
        try:
            vox = VoxOracle(VoxConfig(binary=args.vox, jobs=args.jobs), cache=cache)
        except ToolchainMissing as exc:
            notes.append(f"Vox declarations skipped: {exc}")
        else:
            results["vox"] = repair_rows(extracted.declarations, vox, config, lang="vox")
    summary = write_run(results, args.out, {"declarations": len(extracted.declarations), "seed": args.seed,
                                            "notes": notes})
    if args.json:
        print(json.dumps(summary))
    else:
        for lang, result in results.items():
            print_operator_table(result, lang)
        print(f"{summary['rows']} repair rows, {summary['distinct_error_codes']} distinct error codes; "
              f"rows -> {summary['paths']['rows']}")
        for note in notes:
            print(note)
    return EXIT_OK


def print_operator_table(result, lang: str) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table("operator", "attempts", "applicable", "killed", "equivalent", "duplicate", "kept", "kill rate",
                  title=f"{lang} mutation operators")
    for row in result.table():
        rate = "-" if row["kill_rate"] is None else f"{row['kill_rate']:.0%}"
        table.add_row(row["operator"], *(str(row[k]) for k in ("attempts", "applicable", "killed", "equivalent",
                                                               "duplicate", "kept")), rate)
    console = Console(highlight=False, width=max(120, Console().width))
    console.print(table)
    codes = ", ".join(f"{c} {n}" for c, n in result.codes.most_common(12))
    console.print(f"{len(result.rows)} {lang} rows; codes: {codes}")


def _load_config(args):
    from synth.config import ConfigError, load_config
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    if getattr(args, "out", None):
        config.run.out = str(Path(args.out).resolve())
    return config


def cmd_plan_config(args) -> int:
    from synth.llm.prices import PriceMissing
    from synth.pipeline.plan import plan_run
    config = _load_config(args)
    try:
        plan = plan_run(config, args.max_spend)
    except PriceMissing as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(plan))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table
    table = Table("stage", "model", "items", "calls", "cache hits", "input tok", "output tok", "expected $",
                  "worst $", "rows", "compile (s)", "attrition", title="plan: what `synth run` would do (no call made)")
    for r in plan["stages"] + [{**plan["total"], "stage": "total", "model": "", "attrition": ""}]:
        table.add_row(r["stage"], r["model"], str(r["items"]), f"{r['calls']:g}", str(r["cache_hits"]),
                      str(int(r["input_tokens"])), f"{r['expected_output_tokens']:.0f}", f"{r['expected_cost_usd']:.4f}",
                      f"{r['worst_case_usd']:.4f}", f"{r['expected_rows']:.0f}", f"{r['compiler_s']:.2f}",
                      r["attrition"])
    console = Console(width=max(140, Console().width), highlight=False)
    console.print(table)
    from rich.markup import escape
    for name, why in plan["skipped"].items():
        console.print(f"skipped: {name}: {escape(why)}")
    for note in plan["notes"]:
        console.print(f"note: {escape(note)}")
    return EXIT_OK


def cmd_run(args, refresh: bool = False) -> int:
    from synth.config import ConfigError
    from synth.pipeline.run import Locked, run_pipeline
    config = _load_config(args)
    if args.max_spend is not None and args.max_spend < 0:
        raise UsageError("--max-spend must be >= 0")
    quiet = args.json or refresh
    try:
        if quiet:
            summary = run_pipeline(config, args.max_spend, batch=getattr(args, "batch", None) or None)
        else:
            summary = _run_with_progress(config, args.max_spend)
    except Locked as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    result = summary.as_dict()
    if args.json:
        print(json.dumps(result))
    else:
        _print_run(result, refresh)
    return EXIT_FAILED if summary.attention else EXIT_OK


def _run_with_progress(config, max_spend):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from synth.pipeline.run import PAID_STAGES, run_pipeline
    console = Console(highlight=False)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    enabled = [n for n in ("repair", *PAID_STAGES) if getattr(config.stages, n).enabled]
    if cap <= 0 and config.paid_stages():
        console.print(f"spending cap is $0: only stages that spend nothing run (skipped: {', '.join(config.paid_stages())})")
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("stages", total=len(enabled), status="extracting...")
        items: dict[str, int] = {}

        def on_item(stage, note, spent):  # an item of an LLM stage finished
            if stage not in items:
                items[stage] = bar.add_task(stage, total=None, status="")
            bar.update(items[stage], advance=1, status=f"last: {note}; spent ${spent:.4f} of ${cap:.2f}")

        def progress(name, output, spent):
            reasons = ", ".join(f"{k} {v}" for k, v in output.reasons().most_common(3)) or "none"
            bar.update(task, advance=1, status=f"{name}: kept {len(output.rows)}, rejected {len(output.rejected)} "
                                               f"({reasons}); spent ${spent:.4f} of ${cap:.2f}")
        summary = run_pipeline(config, max_spend, progress=progress, on_item=on_item)
        bar.update(task, completed=len(enabled))
    return summary


def _print_run(result: dict, refresh: bool) -> None:
    for name, stage in result["stages"].items():
        print(f"{name:>14}: {stage['items']} items ({stage['reused']} reused, {stage['processed']} processed, "
              f"{stage['undone']} undone) -> {stage['rows']} rows, {stage['rejected']} rejected, "
              f"${stage['spent_usd']:.4f}")
    for name, why in result["skipped"].items():
        print(f"{name:>14}: skipped ({why})")
    diff = result["diff"]["total"]
    print(f"spent ${result['spent_usd']:.4f} of ${result['cap_usd']:.2f}; {result['llm_calls']} LLM calls "
          f"({result['llm_cache_hits']} cache hits); {result['compiler_runs']} compiler runs "
          f"({result['candidates_compiled']} candidates compiled)")
    print(f"snapshot {result['snapshot']}: +{diff['added']} -{diff['removed']} ~{diff['changed']} rows vs the previous one")
    if result.get("batch_submitted"):
        print(f"batch mode: {result['batch_submitted']} request(s) submitted; their answers are used by the next refresh")
    for note in result.get("notes", []):
        print(note)
    for item in result["attention"]:
        print(f"needs attention: {item}")


def cmd_report(args) -> int:
    from synth.report import ReportError, write_report
    try:
        path = write_report(args.run_dir, args.out, train_dirs=args.train or [])
    except ReportError as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps({"report": str(path)}) if args.json else f"report -> {path}")
    return EXIT_OK


def cmd_plan(args) -> int:
    """Dry run over a file of requests (one JSON object a line: stage, provider, model, messages,
    max_tokens, n, free, template_hash, base_url). Makes no call."""
    from synth.jsonl import read_jsonl
    from synth.llm.client import LLMRequest
    from synth.llm.plan import plan_calls
    from synth.llm.prices import PriceMissing, PriceTable
    from synth.llm.response_cache import ResponseCache

    if args.config:
        return cmd_plan_config(args)
    if not args.requests:
        raise UsageError("nothing to plan: give --config synth.toml, or --requests FILE")
    calls = []
    for raw in read_jsonl(args.requests):
        stage = raw.pop("stage", "default")
        raw["messages"] = tuple(raw["messages"])
        calls.append((stage, LLMRequest(**raw)))
    try:
        plan = plan_calls(calls, PriceTable(args.prices), ResponseCache(args.llm_cache), batch=args.batch)
    except PriceMissing as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(plan))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table
    table = Table("stage", "model", "items", "calls", "cache hits", "input tokens", "expected output", "expected $",
                  "worst case $", title="plan (no call made)")
    for r in plan["rows"]:
        table.add_row(r["stage"], r["model"], str(r["items"]), str(r["calls"]), str(r["cache_hits"]),
                      str(r["input_tokens"]), f"{r['expected_output_tokens']:.0f}" + ("" if r["history"] else " (max)"),
                      f"{r['expected_cost_usd']:.4f}", f"{r['worst_case_usd']:.4f}")
    Console(width=max(120, Console().width)).print(table)
    print(f"expected ${plan['expected_cost_usd']:.4f}, worst case ${plan['worst_case_usd']:.4f}")
    return EXIT_OK


def cmd_assemble(args) -> int:
    from pydantic import ValidationError

    from synth.assemble.mix import load_mix
    from synth.assemble.snapshot import AssemblyError, assemble, write_snapshot

    try:
        mix = load_mix(args.mix)
    except FileNotFoundError as exc:
        raise UsageError(f"{args.mix}: no such mix file") from exc
    except (ValidationError, ValueError) as exc:
        raise UsageError(f"{args.mix}: invalid mix file: {exc}") from exc
    if args.strict:
        mix.strict = True
    if args.seed is not None:
        mix.seed = args.seed
    try:
        snap = assemble(mix)
    except AssemblyError as exc:
        print(f"synth: assembly failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    paths = write_snapshot(snap, args.out, parquet=not args.no_parquet)
    summary = {**snap.manifest["counts"], "warnings": snap.warnings, "paths": paths}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"train {summary['train']}, val {summary['val']}, rejected {summary['rejected']} -> {args.out}")
        for warning in snap.warnings:
            print(f"warning: {warning}")
    return EXIT_OK


def _training_errors():
    from training.dataset import LeakedSplit
    from training.manifest import ResumeRefused
    from training.profile import ProfileError
    from training.trainer_args import UnknownTrainerArgument
    return (ProfileError, ResumeRefused, LeakedSplit, UnknownTrainerArgument, FileNotFoundError)


def cmd_train(args) -> int:
    from training.integrity import InertAdapter
    from training.profile import load_profile, parse_profile
    overrides = {k: str(Path(v).resolve()) for k, v in (("output_dir", args.out), ("model", args.model),
                                                         ("data", args.data)) if v}
    try:
        if args.profile:
            profile = load_profile(args.profile, overrides)
        elif "model" in overrides and "data" in overrides and "output_dir" in overrides:
            profile = parse_profile(overrides, "command line")
        else:
            raise UsageError("give --profile P, or --model DIR --data RUN_DIR --out DIR")
        if args.max_steps:
            getattr(profile, args.stage).max_steps = args.max_steps
        if args.stage == "sft":
            from training.sft import run_sft
            manifest = run_sft(profile, resume=args.resume)
        else:
            from training.grpo import run_grpo
            manifest = run_grpo(profile, resume=args.resume)
    except _training_errors() as exc:
        raise UsageError(str(exc)) from exc
    except InertAdapter as exc:
        print(f"synth: training failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if not manifest.get("is_main_process", True):
        return EXIT_OK  # under `accelerate launch` the main process reports
    brief = {k: manifest.get(k) for k in ("kind", "world_size", "global_step", "step_times", "adapter_check", "data", "oracle")
             if k in manifest}
    brief["output_dir"] = profile.output_dir
    print(json.dumps(brief, indent=None if args.json else 2, default=str))
    return EXIT_OK


def cmd_eval(args) -> int:
    from training.evaluate import run_eval
    from training.profile import load_profile
    from training.rewards import load_tasks, oracles_for
    try:
        profile = load_profile(args.profile)
        tasks_path = args.tasks or profile.eval.tasks
        oracles = oracles_for(profile.oracle, {t.lang for t in load_tasks(tasks_path)})
        baseline = json.loads(Path(args.baseline).read_text()) if args.baseline else None
        result = run_eval(profile.eval, args.model or profile.model, args.adapter, oracles, args.out,
                          baseline=baseline, seed=profile.seed, tasks_path=tasks_path)
    except _training_errors() as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps({"summary": result["summary"], "gate": result.get("gate"), "out": args.out},
                     indent=None if args.json else 2))
    return EXIT_FAILED if result.get("gate", {}).get("regressed") else EXIT_OK


def cmd_demo(args) -> int:
    from synth.demo import run_demo
    return run_demo(vox_binary=args.vox, cache=_open_cache(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="synth", description="Compiler-verified training data for code models.")
    sub = parser.add_subparsers(dest="verb", required=True)

    def common(p):
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="verdict cache folder")
        p.add_argument("--no-cache", action="store_true", help="always run the compiler")
        p.add_argument("--vox", default="vox", help="path to the `vox` binary (default: vox on PATH)")

    check = sub.add_parser("check", help="oracle verdict per file")
    common(check)
    check.add_argument("files", nargs="+", metavar="FILE")
    check.add_argument("--lang", choices=["rust", "vox"])
    check.add_argument("--edition", default="2021", choices=["2015", "2018", "2021", "2024"])
    check.add_argument("--jobs", type=int, default=2)
    check.set_defaults(func=cmd_check)

    bench = sub.add_parser("bench", help="print the figures the issues ask for")
    common(bench)
    bench.add_argument("what", choices=["oracle", "extract", "train", "refresh", "loop"])
    bench.add_argument("--steps", type=int, help="train: optimizer steps per measured run (12); loop: SFT steps (16)")
    bench.add_argument("--n", type=int, default=500, help="oracle: candidates; refresh: declarations (300)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--repeats", type=int, default=5)
    bench.add_argument("--jobs", type=int, help="workers (oracle: 1, the same for both sides; extract: all cores; loop: torch threads)")
    bench.add_argument("--crates", nargs="+", metavar="PATH",
                       help="oracle: Rust sources for the pipeline stream (default examples/rust)")
    bench.add_argument("--heldout", nargs="+", metavar="PATH",
                       help="loop: crates whose verified declarations become the held-out tasks")
    bench.add_argument("--mb", type=float, default=20.0, help="extract: size of the generated corpus")
    bench.set_defaults(func=cmd_bench)

    extract = sub.add_parser("extract", help="declarations JSONL from Rust and Vox sources")
    extract.add_argument("--json", action="store_true", help="print the summary as JSON")
    extract.add_argument("paths", nargs="+", metavar="PATH")
    extract.add_argument("--out", required=True, help="declarations JSONL to write")
    extract.add_argument("--include-tests", action="store_true", help="keep test functions and test modules")
    extract.add_argument("--max-bytes", type=int, default=1_000_000, help="skip larger files")
    extract.add_argument("--vox-grammar", help="compiled tree-sitter grammar for Vox (shared library)")
    extract.set_defaults(func=cmd_extract)

    mutate = sub.add_parser("mutate", help="repair rows from compiler-rejected mutants (no LLM, no spend)")
    common(mutate)
    mutate.add_argument("paths", nargs="+", metavar="PATH")
    mutate.add_argument("--out", required=True, help="run directory (rows/, rejected/, stats/)")
    mutate.add_argument("--seed", type=int, default=0)
    mutate.add_argument("--diff", action="store_true", help="answer with a unified diff")
    mutate.add_argument("--max-share", type=float, default=0.25, help="cap per operator and per error code")
    mutate.add_argument("--jobs", type=int, default=2)
    mutate.set_defaults(func=cmd_mutate)

    plan = sub.add_parser("plan", help="dry run: what the calls would cost (makes no call)")
    plan.add_argument("--json", action="store_true")
    plan.add_argument("--config", help="synth.toml: plan what `synth run` would do")
    plan.add_argument("--max-spend", type=float, help="the cap to plan under (default: [budget] of the config)")
    plan.add_argument("--out", help="run directory (default: [run] out of the config)")
    plan.add_argument("--requests", help="JSONL of requests to price")
    plan.add_argument("--batch", action="store_true", help="price at batch (50%%) rates")
    plan.add_argument("--prices", help="price override file (else SYNTH_PRICES, else the shipped table)")
    plan.add_argument("--llm-cache", default=str(Path("cache") / "llm"), help="response cache (history, hits)")
    plan.set_defaults(func=cmd_plan)

    assemble = sub.add_parser("assemble", help="rows from runs -> a dataset snapshot (train/val/manifest)")
    assemble.add_argument("--mix", required=True, help="mix file (TOML)")
    assemble.add_argument("--out", required=True, help="snapshot folder")
    assemble.add_argument("--seed", type=int)
    assemble.add_argument("--strict", action="store_true", help="a lane below its readiness thresholds fails")
    assemble.add_argument("--no-parquet", action="store_true")
    assemble.add_argument("--json", action="store_true")
    assemble.set_defaults(func=cmd_assemble)

    for verb, helptext in (("run", "every enabled stage, under the spending cap, then a snapshot"),
                           ("refresh", "nightly: incremental run under a lock, new snapshot and diff (for cron)")):
        p = sub.add_parser(verb, help=helptext)
        p.add_argument("--config", required=True, help="synth.toml")
        p.add_argument("--out", help="run directory (default: [run] out of the config)")
        p.add_argument("--max-spend", type=float, help="USD cap for this run (default: [budget] max_spend_usd)")
        p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
        if verb == "refresh":
            p.add_argument("--batch", action="store_true", help="LLM calls through the batch APIs (half price)")
        p.set_defaults(func=(lambda a: cmd_run(a, refresh=True)) if verb == "refresh" else cmd_run)

    report = sub.add_parser("report", help="one self-contained HTML report of a run directory")
    report.add_argument("run_dir")
    report.add_argument("--out", help="HTML file (default: RUN_DIR/report.html)")
    report.add_argument("--train", action="append", help="a training output directory to include (repeatable)")
    report.add_argument("--json", action="store_true")
    report.set_defaults(func=cmd_report)

    train = sub.add_parser("train", help="LoRA SFT or GRPO on a snapshot (see docs in README)")
    train.add_argument("stage", choices=["sft", "grpo"])
    train.add_argument("--profile", help="training profile (TOML, or synth.toml with [train])")
    train.add_argument("--model", help="local model directory (overrides the profile's)")
    train.add_argument("--data", help="run directory or snapshot with train.jsonl/val.jsonl (overrides the profile's)")
    train.add_argument("--out", help="output directory (overrides the profile's output_dir)")
    train.add_argument("--max-steps", type=int, help="stop after N optimizer steps")
    train.add_argument("--resume", action="store_true", help="resume the latest checkpoint (same data only)")
    train.add_argument("--json", action="store_true")
    train.set_defaults(func=cmd_train)

    evaluate = sub.add_parser("eval", help="pass@k and compile rate on held-out tasks, with a regression gate")
    evaluate.add_argument("--profile", required=True)
    evaluate.add_argument("--model", help="model directory (default: the profile's model)")
    evaluate.add_argument("--adapter", help="LoRA adapter directory to apply")
    evaluate.add_argument("--tasks", help="tasks JSONL (default: [eval] tasks of the profile)")
    evaluate.add_argument("--baseline", help="an earlier eval JSON: fail (exit 1) on a significant regression")
    evaluate.add_argument("--out", required=True, help="where to write the evaluation JSON")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(func=cmd_eval)

    demo = sub.add_parser("demo", help="the offline job on the bundled examples (spends nothing)")
    common(demo)
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors already
        return int(exc.code or 0)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"synth: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
