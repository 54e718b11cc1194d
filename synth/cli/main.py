"""`synth` command line. Each verb is a thin shell over plain functions; `--json` on each."""
from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

from oracles.isolation import run_folders
from oracles.errors import InputError, SynthError
from synth.cli.check import check_paths, verdict_json
from synth.cli.args import build_parser
from synth.cli.render import (print_extract_summary, print_mutate, print_plan, print_request_plan, print_run,
                          print_verdict, run_with_progress)

EXIT_OK, EXIT_FAILED = 0, 1  # and each SynthError's own exit_code (2: bad input, 3: the run is locked)
# `synth bench WHAT`: the scripts of benchmarks/, loaded by name when asked for (nothing else needs them).
BENCHES = {"oracle": "benchmarks.oracle_bench", "extract": "benchmarks.extract_bench",
           "train": "benchmarks.train_bench", "refresh": "benchmarks.refresh_bench", "shape": "benchmarks.shape",
           "crates": "benchmarks.crates_bench", "loop": "benchmarks.loop_bench", "ablate": "benchmarks.ablations",
           "night": "benchmarks.night_bench", "sampler": "benchmarks.sampler_bench",
           "crate-tests": "benchmarks.crate_tests_bench", "judge": "benchmarks.judge_bench"}


class UsageError(InputError):
    """Bad arguments: exit status 2 with a message."""


def show(args, result: dict, for_people) -> None:
    """`--json`: the result as one JSON line; else `for_people()` prints it."""
    if args.json:
        print(json.dumps(result))
    else:
        for_people()


def _open_cache(args):
    if args.no_cache:
        return None
    from oracles.cache import VerdictCache
    return VerdictCache(args.cache_dir)


def cmd_check(args) -> int:
    results = check_paths(args.files, args.lang, args.edition, args.vox, _open_cache(args), args.jobs)
    for path, verdict in results:
        if args.json:
            print(json.dumps(verdict_json(path, verdict)))
        else:
            print_verdict(path, verdict)
    return EXIT_OK if all(v.passed for _, v in results) else EXIT_FAILED


def cmd_bench(args) -> int:
    import importlib
    for raw in getattr(args, "crates", None) or []:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
    if args.executor == "ray" and args.what != "oracle":
        raise UsageError(f"bench {args.what} measures this machine; `--executor ray` is for `bench oracle`")
    result = importlib.import_module(BENCHES[args.what]).bench(args)
    show(args, result, lambda: [print(f"{key:>24}: {value}") for key, value in result.items()])
    return EXIT_OK if result.get("identical", True) else EXIT_FAILED


def cmd_extract(args) -> int:
    from synth.extract.extract import ExtractOptions, extract_to_jsonl
    for raw in args.paths:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
    options = ExtractOptions(include_tests=args.include_tests, max_bytes=args.max_bytes, vox_grammar=args.vox_grammar)
    if args.max_context_bytes is not None:
        options.max_context_bytes = args.max_context_bytes or None
    if args.jobs:
        options.jobs = args.jobs
    result = extract_to_jsonl(args.paths, args.out, options)
    summary = {**result.summary(), "out": args.out}
    show(args, summary, lambda: print_extract_summary(summary, args.out))
    return EXIT_OK


def cmd_mutate(args) -> int:
    """A run with only the repair lane over PATHs (synth/pipeline/mutate.py): the run's files and summary."""
    from oracles.settings import OracleSettings
    from synth.mutate.settings import RepairSettings
    from synth.pipeline.mutate import repair_only
    from synth.pipeline.run import run_pipeline

    for raw in args.paths:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
    if not 0 < args.max_share <= 1:
        raise UsageError("--max-share must be in (0, 1]")
    repair = RepairSettings(max_share=args.max_share, diff=args.diff, in_crate=args.in_crate)
    with run_folders.folder("mutate-cache") if args.no_cache else nullcontext(args.cache_dir) as cache_dir:
        config = repair_only(args.paths, args.out, cache_dir, seed=args.seed, repair=repair,
                             oracles=OracleSettings(vox=args.vox, jobs=args.jobs), include_tests=args.include_tests,
                             executor=args.executor, ray_address=args.ray_address)
        result = run_pipeline(config).as_dict()
    show(args, result, lambda: print_mutate(result))
    return EXIT_OK  # what needs attention (no `vox` for Vox files) is printed; it was never mutate's failure


def _load_config(args):
    from synth.settings.config import load_config
    from synth.lanes import LANES
    config = load_config(args.config, LANES)
    if getattr(args, "out", None):
        config.run.out = str(Path(args.out).resolve())
    if getattr(args, "executor", None):
        config.run.executor = args.executor
    if getattr(args, "ray_address", None):
        config.run.ray_address = args.ray_address
    return config


def cmd_plan_config(args) -> int:
    from synth.pipeline.run import plan_run
    plan = plan_run(_load_config(args), args.max_spend)
    show(args, plan, lambda: print_plan(plan))
    return EXIT_OK


def cmd_run(args, refresh: bool = False) -> int:
    from synth.pipeline.run import run_pipeline
    config = _load_config(args)
    if args.max_spend is not None and args.max_spend < 0:
        raise UsageError("--max-spend must be >= 0")
    quiet = args.json or refresh
    if quiet:
        summary = run_pipeline(config, args.max_spend, batch=getattr(args, "batch", None) or None)
    else:
        from synth.lanes import LANES
        summary = run_with_progress(config, args.max_spend, run_pipeline, LANES)
    result = summary.as_dict()
    show(args, result, lambda: print_run(result, refresh))
    return EXIT_FAILED if summary.attention else EXIT_OK


def cmd_report(args) -> int:
    from synth.cli.report import write_report
    path = write_report(args.run_dir, args.out, train_dirs=args.train or [])
    print(json.dumps({"report": str(path)}) if args.json else f"report -> {path}")
    return EXIT_OK


def cmd_plan(args) -> int:
    """Dry run over a file of requests (one JSON object a line: stage (the lane it is for), provider, model, messages,
    max_tokens, n, free, template_hash, base_url). Makes no call."""
    from synth.rows.jsonl import read_jsonl
    from synth.llm.client import LLMRequest
    from synth.llm.cost.plan import plan_calls
    from synth.llm.cost.prices import PriceTable
    from synth.llm.response_cache import ResponseCache

    if args.config:
        return cmd_plan_config(args)
    if not args.requests:
        raise UsageError("nothing to plan: give --config synth.toml, or --requests FILE")
    calls = []
    for raw in read_jsonl(args.requests):
        lane = raw.pop("stage", "default")
        raw["messages"] = tuple(raw["messages"])
        calls.append((lane, LLMRequest(**raw)))
    plan = plan_calls(calls, PriceTable(args.prices), ResponseCache(args.llm_cache), batch=args.batch)
    show(args, plan, lambda: print_request_plan(plan))
    return EXIT_OK


def cmd_assemble(args) -> int:
    from synth.assemble.mix import load_mix
    from synth.assemble.snapshot import assemble, write_snapshot

    mix = load_mix(args.mix)
    if args.strict:
        mix.strict = True
    if args.seed is not None:
        mix.seed = args.seed
    snap = assemble(mix)
    paths = write_snapshot(snap, args.out, parquet=not args.no_parquet)
    summary = {**snap.manifest["counts"], "warnings": snap.warnings, "paths": paths}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"train {summary['train']}, val {summary['val']}, rejected {summary['rejected']} -> {args.out}")
        for warning in snap.warnings:
            print(f"warning: {warning}")
    return EXIT_OK


def cmd_train(args) -> int:
    from training.run.profile import load_profile, parse_profile
    overrides = {k: str(Path(v).resolve()) for k, v in (("output_dir", args.out), ("model", args.model),
                                                         ("data", args.data)) if v}
    if args.profile:
        profile = load_profile(args.profile, overrides)
    elif "model" in overrides and "data" in overrides and "output_dir" in overrides:
        profile = parse_profile(overrides, "command line")
    else:
        raise UsageError("give --profile P, or --model DIR --data RUN_DIR --out DIR")
    if args.max_steps:
        getattr(profile, args.stage).max_steps = args.max_steps
    if args.tasks:
        profile.grpo.tasks = str(Path(args.tasks).resolve())
    if args.reward:
        from training.rewards import COMPONENTS
        for given in args.reward:
            name, _, weight = given.partition("=")
            try:
                if name not in COMPONENTS:
                    raise ValueError(name)
                profile.grpo.reward_weights[name] = float(weight)
            except ValueError:
                raise UsageError(f"--reward {given!r}: NAME=WEIGHT, NAME one of {sorted(COMPONENTS)}") from None
    if args.stage == "sft":
        from training.sft import run_sft
        manifest = run_sft(profile, resume=args.resume)
    else:
        from training.grpo import run_grpo
        manifest = run_grpo(profile, resume=args.resume)
    if not manifest.get("is_main_process", True):
        return EXIT_OK  # under `accelerate launch` the main process reports
    brief = {k: manifest.get(k) for k in ("kind", "world_size", "global_step", "step_times", "adapter_check", "data", "oracle")
             if k in manifest}
    brief["output_dir"] = profile.output_dir
    print(json.dumps(brief, indent=None if args.json else 2, default=str))
    return EXIT_OK


def cmd_eval(args) -> int:
    from training.evaluation.evaluate import run_eval
    from training.run.profile import load_profile
    if args.turns is not None and args.turns < 1:
        raise UsageError("--turns must be at least 1 (the first answer)")
    if args.retries is not None and args.retries < 0:
        raise UsageError("--retries must be 0 (none) or more")
    if args.draws is not None and args.draws < 1:
        raise UsageError("--draws must be at least 1")
    profile = load_profile(args.profile)
    settings = profile.eval.model_copy(update={k: v for k, v in (("decoding", args.decoding), ("shots", args.shots),
                                                                 ("examples", args.examples), ("turns", args.turns),
                                                                 ("dtype", args.dtype), ("pick", args.pick),
                                                                 ("retries", args.retries), ("draws", args.draws),
                                                                 ("crate_tests", args.crate_tests))
                                                   if v is not None})
    if args.samples is not None:  # N sampled answers a task (pass@k for k up to N)
        if args.samples < 1:
            raise UsageError("--samples must be at least 1")
        settings = settings.model_copy(update={"decoding": "sample", "samples": args.samples,
                                               "k": min(settings.k, args.samples)})
    baseline = _read_json(args.baseline, "baseline evaluation") if args.baseline else None
    result = run_eval(settings, args.model or profile.model, args.adapter, profile.oracle, args.out,
                      baseline=baseline, seed=profile.seed, tasks_path=args.tasks or settings.tasks,
                      answers=args.answers, family=args.family, after=args.after,
                      edits=profile.edits)
    gate = result.get("gate") or {}
    print(json.dumps({"summary": result["summary"], "families": {f: {k: v for k, v in r.items() if k != "samples"}
                                                                for f, r in result["families"].items()},
                      "gate": gate or None, **({"draws": result["draws"]} if "draws" in result else {}),
                      "out": args.out}, indent=None if args.json else 2))
    return EXIT_FAILED if any(g["regressed"] for g in gate.values()) else EXIT_OK


def cmd_selfrepair(args) -> int:
    from synth.tasks.selfrepair import write_selfrepair_tasks
    from training.run.profile import load_profile
    answers = {}
    for given in args.answers:
        name, _, path = given.partition("=")
        if not name or not path or name in answers:
            raise UsageError(f"--answers {given!r}: NAME=FILE, one per model name")
        answers[name] = path
    result = write_selfrepair_tasks(args.tasks, answers, load_profile(args.profile).oracle, args.out)
    print(json.dumps(result, indent=None if args.json else 2))
    return EXIT_OK


def _read_json(path: str, what: str):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc}") from exc


def cmd_tools(args) -> int:
    from synth.tools.listing import format_listing, list_tools
    if not args.server:
        raise UsageError("tools list: --server needs the server's command (e.g. --server mcp-server-time)")
    result = list_tools(args.server, name=args.name, env=args.env, out=args.out)
    print(json.dumps(result, sort_keys=True) if args.json else format_listing(result))
    return EXIT_FAILED if result["error"] or result["refused"] else EXIT_OK


def cmd_demo(args) -> int:
    from synth.cli.demo import run_demo
    return run_demo(vox_binary=args.vox, cache=_open_cache(args))


COMMANDS = {"check": cmd_check, "bench": cmd_bench, "extract": cmd_extract, "mutate": cmd_mutate, "plan": cmd_plan,
            "assemble": cmd_assemble, "run": cmd_run, "refresh": lambda a: cmd_run(a, refresh=True),
            "report": cmd_report, "train": cmd_train, "eval": cmd_eval, "selfrepair": cmd_selfrepair, "tools": cmd_tools, "demo": cmd_demo}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(BENCHES)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors already
        return int(exc.code or 0)
    run_folders.guard_run()  # a run stopped leaves no temp folder behind
    try:
        return COMMANDS[args.command](args)
    except SynthError as exc:  # the one place an error becomes a message and an exit status
        print(f"synth: {exc.label}: {exc}" if exc.label else f"synth: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
