"""`synth run` and `synth refresh`: every enabled lane over the config's sources, under a lock,
under the spend cap, incremental by content hash, ending in a snapshot and a diff against the
previous one; and `synth plan`, which prices the same run from the same setup (`open_run`).

The run directory (contract): rows/<task>.jsonl.zst, rejected/<lane>.jsonl, train.jsonl.zst, val.jsonl.zst,
manifest.json; plus snapshots/NNNN/ (each run's snapshot and its diff), stats/run.json (the
funnel, rejections, diagnostic codes, cost by lane and model, counters) and ledgers/.
Everything a crash leaves behind is reused by the next run: stored items, cached LLM answers and
verdicts, graph checkpoints."""
from __future__ import annotations

import fcntl
import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from oracles.errors import SynthError
from synth.settings.fit import Fit
from synth.settings.config import SynthSettings
from synth.extract.extract import extract_sources
from synth.extract.model import crate_name
from synth.rows.jsonl import write_json, write_jsonl
from synth.rows.rowfile import LEGACY_SUFFIX, SUFFIX, row_files, rows_path, write_rows
from synth.rows.rejection import Rejection
from synth.tasks.split import split_outputs
from synth.lanes.base import LaneOutput
from synth.rows.row import Row
from synth.rows.store import ItemStore

from .setup import DeferringClient, collect_batches, last_stats, preflight, recover_crashed_ledgers
from .snapshot import snapshot_run


class Locked(SynthError, RuntimeError):
    """Another process holds the run directory: nothing was done, exit 3."""
    exit_code = 3
    label = None


@contextmanager
def run_lock(out: Path):
    """One run or refresh per run directory at a time; the second one is told, not queued."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / ".lock"
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise Locked(f"{out} is in use by {holder}; nothing was done (this run exits, it does not wait)") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
    handle.flush()
    try:
        yield
    finally:
        handle.seek(0)
        handle.truncate()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


@dataclass
class RunSummary:
    out: str
    lanes: dict = field(default_factory=dict)  # name -> funnel (published as "stages")
    skipped: dict = field(default_factory=dict)  # name -> why
    spent_usd: float = 0.0
    cap_usd: float = 0.0
    llm_calls: int = 0
    llm_cache_hits: int = 0
    compiler_runs: int = 0
    candidates_compiled: int = 0
    snapshot: str = ""
    diff: dict = field(default_factory=dict)
    attention: list = field(default_factory=list)
    batch_submitted: int = 0
    notes: list = field(default_factory=list)
    paths: dict = field(default_factory=dict)
    executor: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)  # wall of each phase: setup, lanes, write (what a plan prices)

    def as_dict(self) -> dict:
        """The summary as published: the lanes' funnels under their published key, `stages`."""
        return {("stages" if k == "lanes" else k): v for k, v in self.__dict__.items()}


TOTALS = ("items", "calls", "cache_hits", "input_tokens", "expected_output_tokens", "expected_cost_usd",
          "worst_case_usd", "expected_rows", "compiler_candidates", "compiler_s", "sampling_s")


@contextmanager
def open_run(config: SynthSettings, executor=None):
    """What a run and its plan both start from, built once: the declarations of the sources, the
    item store, the verdict cache, an oracle per language and the crate oracle (as `executor` runs
    them), in the lanes' context (`ctx.attention` says what needs a person). Closed after."""
    from oracles.cache import VerdictCache
    from oracles.factory import build_oracles, crate_oracle, crate_tests_oracle
    from synth.executor.local import LocalExecutor
    from synth.lanes import LANES
    from synth.lanes.base import RunContext

    executor = executor or LocalExecutor()
    cache_dir = Path(config.run.cache_dir)
    store = ItemStore(cache_dir / "items")
    attention: list[str] = []
    decls, _ = extract_sources(config.sources)
    verdicts = VerdictCache(cache_dir / "verdicts")
    oracles = {lang: executor.oracle(o, config.oracles)
               for lang, o in build_oracles({d.lang for d in decls}, config.oracles, verdicts, attention).items()}
    ctx = RunContext(store=store, oracles=oracles, client=None, seed=config.run.seed, models=config.models,
                     settings=config.lane_settings(), fit=Fit(config.tokens),
                     tasks=config.tasks if config.writes_tasks(LANES) else None,
                     task_lanes=tuple(name for name, lane in LANES.items() if lane.poses_tasks),
                     cache_dir=str(cache_dir), out=str(config.run.out), attention=attention,
                     roots={crate_name(d): d.crate_root for d in decls if d.crate_root},
                     crate_tests=lambda: crate_tests_oracle(config.oracles, str(cache_dir / "verdicts")),
                     crate_oracle=executor.oracle(crate_oracle(oracles, config.oracles, verdicts, attention),
                                                  config.oracles))
    try:
        yield ctx, decls
    finally:
        if ctx.crate_oracle is not None:
            ctx.crate_oracle.close()
        store.close()


def plan_run(config: SynthSettings, max_spend: float | None = None) -> dict:
    """`synth plan --config`: what `synth run` would do now, per lane and model, without a call or
    a compile. Items are those the item store has no answer for (what a run would process); calls
    and tokens come from the real prompts where they can be built and from the attrition measured
    in the last run otherwise; completion lengths from the response cache's history; compiler
    time from the last run's measured rate. Each lane prices itself (`Lane.plan`)."""
    from synth.lanes import LANES
    from synth.lanes.base import pending
    from synth.lanes.estimate import DEFAULT_COMPILE_S, Estimate
    from synth.llm.cost.plan import plan_calls
    from synth.llm.cost.prices import PriceTable
    from synth.llm.response_cache import ResponseCache
    from synth.llm.cost.tokens import count_text

    last = last_stats(config.run.out) or {}
    measured = last.get("measured") or (last.get("summary") or {}).get("stages", {})  # older stats: the run's own
    # seconds per compiled candidate, where the last run compiled the most
    most = max(measured.values(), key=lambda s: s.get("candidates_compiled") or 0, default={})
    compile_rate = DEFAULT_COMPILE_S
    if most.get("candidates_compiled") and most.get("seconds"):
        compile_rate = most["seconds"] / most["candidates_compiled"]
    prices = PriceTable(config.run.prices) if config.run.prices else PriceTable()
    llm_cache = ResponseCache(Path(config.run.cache_dir) / "llm")
    estimate = Estimate(prices=prices, llm_cache=llm_cache, measured=measured, compile_rate=compile_rate,
                        out=config.run.out, plan_calls=lambda requests: plan_calls(requests, prices, llm_cache),
                        count_text=count_text)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    rows, skipped = [], {}
    started = time.perf_counter()
    with open_run(config) as (ctx, decls):
        setup_s = time.perf_counter() - started  # the run starts the same way: extraction, oracles
        for name, lane in LANES.items():
            settings = ctx.settings[name]
            why = lane.skip_reason(settings, config.models, cap, estimate.planned)
            if why:
                skipped[name] = why
                continue
            todo = pending(lane, ctx, settings, lane.plan_items(ctx, settings, decls, estimate))
            row = lane.plan(ctx, settings, todo, estimate)
            estimate.planned[name] = (row, todo)
            rows.append(row)
    total = {k: round(sum(r[k] for r in rows), 6) for k in TOTALS}
    # the run's wall: its start as the plan's, the lanes, then the rows through tasks, files and the snapshot
    seconds = {"setup": round(setup_s, 1), "lanes": round(total["compiler_s"] + total["sampling_s"], 1),
               "write": round(total["expected_rows"] * written_row_s(last), 1)}
    seconds["total"] = round(sum(seconds.values()), 1)
    return {"stages": rows, "seconds": seconds, "total": total, "skipped": skipped, "cap_usd": cap, "notes": ctx.attention,
            "fits_cap": total["worst_case_usd"] <= cap or total["worst_case_usd"] == 0}


def written_row_s(last: dict) -> float:
    """Seconds a row costs after the lanes (tasks, row files, the snapshot): as the last run took
    them, else the first run's reference."""
    from synth.lanes.estimate import FIRST_RUN_S
    summary = last.get("summary") or {}
    rows = sum(lane.get("rows", 0) for lane in (summary.get("stages") or {}).values())
    written = (summary.get("seconds") or {}).get("write")
    return written / rows if written and rows else FIRST_RUN_S["written_row"]


def run_pipeline(config: SynthSettings, max_spend: float | None = None, progress=None, batch: bool | None = None,
                 on_item=None) -> RunSummary:
    """Every enabled lane; paid ones only under a positive cap. `progress(lane, output, spent)`
    is called as lanes finish, `on_item(lane, note, spent)` as items of the LLM lanes finish."""
    from oracles.factory import build_oracle
    from synth.executor import opened
    from synth.lanes import LANES
    from synth.lanes.base import run_lane
    from synth.llm.client import LLMClient, send_on_worker
    from synth.llm.cost.ledger import Ledger
    from synth.llm.cost.prices import PriceTable
    from synth.llm.response_cache import ResponseCache

    out = Path(config.run.out)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    batch = config.run.batch if batch is None else batch
    summary = RunSummary(out=str(out), cap_usd=cap)
    preflight(config, LANES, cap)
    started = time.perf_counter()
    with run_lock(out), opened(config.run.executor, config.run.ray_address, config.run.ray_batch,
                                build_oracle) as executor, open_run(config, executor) as (ctx, decls):
        summary.seconds["setup"] = round(time.perf_counter() - started, 3)
        attention = ctx.attention
        responses = ResponseCache(Path(config.run.cache_dir) / "llm")
        prices = PriceTable(config.run.prices) if config.run.prices else None
        recover_crashed_ledgers(out / "ledgers", responses)
        run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        ledger = Ledger(out / "ledgers" / f"{run_id}.sqlite", cap)
        client = ctx.client = LLMClient(ledger, responses, prices, seed=config.run.seed)
        client.send = executor.sender(client.retry, send_on_worker) or client.send
        pending = collect_batches(out, responses, prices)  # earlier runs' batch answers -> the response cache
        if pending:
            attention.append(f"{pending} batch(es) still running at the provider; the next refresh collects them")
        if on_item:
            ctx.on_item = lambda lane, note: on_item(lane, note, client.ledger.totals().committed_usd)
        if batch:
            ctx.client = DeferringClient(client, ctx.deferred)
        outputs, oracles = ctx.outputs, ctx.oracles
        spend_by_lane: dict[str, float] = {}
        mark = {"t": time.perf_counter(), "compiled": 0}

        def finish(name: str, output: LaneOutput):
            outputs[name] = output
            spend_by_lane[name] = round(client.ledger.totals().committed_usd - sum(spend_by_lane.values()), 6)
            compiled = sum(o.stats.candidates_compiled for o in [*oracles.values(), ctx.crate_oracle]
                           if getattr(o, "stats", None) is not None)
            output.extra.update(seconds=round(time.perf_counter() - mark["t"], 3),
                                candidates_compiled=compiled - mark["compiled"])
            mark.update(t=time.perf_counter(), compiled=compiled)
            if progress:
                progress(name, output, client.ledger.totals().committed_usd)

        for name, lane in LANES.items():
            settings = ctx.settings[name]
            why = lane.skip_reason(settings, config.models, cap, outputs)
            if why:
                summary.skipped[name] = why
                continue
            finish(name, run_lane(lane, ctx, settings, decls))
        if ctx.deferred:
            from synth.llm.batch import BatchRunner
            from synth.llm.client import BudgetExceeded
            unique = list({r.key(): r for r in ctx.deferred}.values())
            (out / "batches").mkdir(parents=True, exist_ok=True)
            try:
                BatchRunner(client, out / "batches" / f"{run_id}.sqlite").submit(unique)
                summary.batch_submitted = len(unique)
            except BudgetExceeded as exc:
                attention.append(f"batch not submitted: {exc}")
        summary.notes += config.notes
        written = time.perf_counter()
        summary.seconds["lanes"] = round(written - started - summary.seconds["setup"], 3)
        if config.writes_tasks(LANES):
            tasks = [outputs[name] for name in ctx.task_lanes if name in outputs]
            split = split_outputs(out, tasks, config.tasks, config.run.seed, ctx.roots, ctx.oracles.get("rust"))
            summary.notes.append(f"tasks: {split}")
        write_outputs(out, outputs)
        snapshot_dir, diff = snapshot_run(out, config.assemble, config.run.seed)
        summary.seconds["write"] = round(time.perf_counter() - written, 3)
        totals = client.ledger.totals()
        summary.lanes = {name: {**o.funnel(), "model": o.model, "spent_usd": spend_by_lane.get(name, 0.0),
                                 **{k: v for k, v in o.extra.items() if k != "codes"}}
                          for name, o in outputs.items()}
        summary.spent_usd = round(totals.committed_usd, 6)
        summary.llm_calls = client.stats.calls
        summary.llm_cache_hits = client.stats.cache_hits
        summary.compiler_runs = sum(o.stats.compiler_runs for o in oracles.values())
        summary.candidates_compiled = sum(o.stats.candidates_compiled for o in oracles.values())
        summary.snapshot, summary.diff = str(snapshot_dir), diff
        summary.paths = {"rows": [str(p) for p in row_files(out / "rows")],
                         "rejected": sorted(str(p) for p in (out / "rejected").glob("*.jsonl")),
                         **{name: str(rows_path(out, name)) for name in ("train", "val")},
                         "manifest": str(out / "manifest.json"), "stats": str(out / "stats" / "run.json")}
        for name, o in outputs.items():
            if o.undone and batch and summary.batch_submitted:
                summary.notes.append(f"{name}: {o.undone} item(s) wait for batch answers (the next refresh uses them)")
            elif o.undone:
                attention.append(f"{name}: {o.undone} item(s) left undone (spending cap, failed calls or batch "
                                 "answers pending); the next run continues them")
        summary.attention = attention
        summary.executor = executor.stats([*oracles.values(), ctx.crate_oracle])
        write_stats(out, summary, outputs)
    return summary


def write_outputs(out: Path, outputs: dict[str, LaneOutput]) -> None:
    rows_by_task: dict[str, list[Row]] = {}
    rejected_by_lane: dict[str, list[Rejection]] = {}
    for name, output in outputs.items():
        for row in output.rows:
            rows_by_task.setdefault(row.task, []).append(row)
        rejected_by_lane[name] = output.rejected
        if output.pairs:
            write_jsonl(out / "pairs" / f"{name}.jsonl", output.pairs)
    for task, rows in rows_by_task.items():
        write_rows(rows_path(out / "rows", task), sorted(rows, key=lambda r: r.id))
    written = {rows_path(out / "rows", task) for task in rows_by_task}
    for stale in (out / "rows").glob("*.jsonl*"):  # a task no lane wrote this time; a packed file an older synth wrote
        if stale.name.endswith((SUFFIX, LEGACY_SUFFIX)) and stale not in written:
            stale.unlink()
    for name, rejected in rejected_by_lane.items():
        write_jsonl(out / "rejected" / f"{name}.jsonl", [r.to_json() for r in rejected])


def measured_lanes(summary: RunSummary, previous: dict | None) -> dict:
    """Per lane, the figures a plan prices it from: this run's where it compiled something, else
    those the previous stats carried (a run that compiled nothing measured nothing; its figures
    would send the next plan back to the global rate)."""
    before = (previous or {}).get("measured") or ((previous or {}).get("summary") or {}).get("stages", {})
    return {name: lane if lane.get("candidates_compiled") or name not in before else before[name]
            for name, lane in summary.lanes.items()}


def write_stats(out: Path, summary: RunSummary, outputs: dict[str, LaneOutput]) -> None:
    codes = Counter()
    for output in outputs.values():
        for row in output.rows:
            codes.update(getattr(row, "diagnostic_codes", None) or [])
    stats = {
        "summary": summary.as_dict(),
        # In the lane's own unit (a mutant, an instruction, a sample, a tool request): everything
        # considered, what went through the gate (kept or rejected, not left undone), what was kept.
        "funnel": {name: {"candidates": len(o.rows) + len(o.rejected) + o.undone + o.no_oracle,
                          "gated": len(o.rows) + len(o.rejected), "kept": len(o.rows)}
                   for name, o in outputs.items()},
        "rejections": {name: dict(o.reasons().most_common()) for name, o in outputs.items()},
        "diagnostic_codes": dict(codes.most_common()),
        "cost": [{"stage": name, "model": o.model or "-", "usd": summary.lanes[name]["spent_usd"]}
                 for name, o in outputs.items()],
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "measured": measured_lanes(summary, last_stats(out)),
    }
    write_json(out / "stats" / "run.json", stats)
