"""`synth run` and `synth refresh`: every enabled stage over the config's sources, under a lock,
under the spend cap, incremental by content hash, ending in a snapshot and a diff against the
previous one.

The run directory (contract): rows/<task>.jsonl, rejected/<task>.jsonl, train.jsonl, val.jsonl,
manifest.json; plus snapshots/NNNN/ (each run's snapshot and its diff), stats/run.json (the
funnel, rejections, diagnostic codes, cost by stage and model, counters) and ledgers/.
Everything a crash leaves behind is reused by the next run: stored items, cached LLM answers and
verdicts, graph checkpoints."""
from __future__ import annotations

import fcntl
import json
import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from synth.config import SynthConfig
from synth.jsonl import read_jsonl, write_json, write_jsonl
from synth.rows import Row

from .stages import (Context, DeferringClient, StageOutput, backtranslate_stage, doclane_stage, repair_stage, rft_stage,
                     toolcalls_stage)
from .store import ItemStore

PAID_STAGES = ("backtranslate", "rft", "toolcalls")


class Locked(RuntimeError):
    pass


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
    stages: dict = field(default_factory=dict)  # name -> funnel
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

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _model_specs(config: SynthConfig) -> dict:
    from synth.graphs.backtranslate import ModelSpec
    return {name: ModelSpec(provider=m.provider, model=m.model, base_url=m.base_url, max_tokens=m.max_tokens,
                            temperature=m.temperature, free=m.free) for name, m in config.models.items()}


def build_oracles(config: SynthConfig, langs: set[str], cache, attention: list[str]) -> dict:
    from oracles.rust import RustConfig, RustOracle
    from oracles.toolchain import ToolchainMissing
    from oracles.vox import VoxConfig, VoxOracle
    oracles = {}
    if "rust" in langs:
        oracles["rust"] = RustOracle(RustConfig(rustc=config.oracles.rustc, edition=config.oracles.edition,
                                                jobs=config.oracles.jobs), cache=cache)
    if "vox" in langs:
        try:
            oracles["vox"] = VoxOracle(VoxConfig(binary=config.oracles.vox, jobs=config.oracles.jobs), cache=cache)
        except ToolchainMissing:
            attention.append(f"Vox sources were not processed: no `vox` binary at {config.oracles.vox!r} "
                             "(set [oracles] vox in the config to your vox)")
    return oracles


def extract_sources(config: SynthConfig):
    from synth.extract import extract_paths
    from synth.extract.extract import ExtractOptions
    decls, skipped = [], []
    for source in config.sources:
        result = extract_paths([source.path], ExtractOptions())
        decls += [d for d in result.declarations if d.lang == source.lang]
        skipped += result.skipped
    return sorted(decls, key=lambda d: d.id), skipped


def preflight(config: SynthConfig, cap: float) -> None:
    """Before anything runs: every model a stage will call has a key and a price (a missing one
    would otherwise surface as a failure in the middle of the run)."""
    from synth.config import ConfigError
    from synth.llm.prices import PriceMissing, PriceTable
    prices = PriceTable(config.run.prices) if config.run.prices else PriceTable()
    for name in PAID_STAGES:
        stage = getattr(config.stages, name)
        if not stage.enabled:
            continue
        for ref in filter(None, [stage.model, getattr(stage, "judge", None)]):
            model = config.models[ref]
            if model.free or cap <= 0:
                continue
            env = "OPENAI_API_KEY" if model.provider == "openai" else "ANTHROPIC_API_KEY"
            if not os.environ.get(env):
                raise ConfigError(f"stages.{name} uses model {ref!r} ({model.provider}): {env} is not set "
                                  "(keys come only from the environment)")
            try:
                prices.price(model.model)
            except PriceMissing as exc:
                raise ConfigError(f"stages.{name}: {exc}") from exc


def run_pipeline(config: SynthConfig, max_spend: float | None = None, progress=None, batch: bool | None = None,
                 on_item=None) -> RunSummary:
    """All enabled stages; paid stages only under a positive cap. `progress(stage, output, spent)`
    is called as stages finish, `on_item(stage, note, spent)` as items of the LLM stages finish."""
    from oracles.cache import VerdictCache
    from synth.llm.client import LLMClient
    from synth.llm.ledger import Ledger
    from synth.llm.prices import PriceTable
    from synth.llm.response_cache import ResponseCache

    out = Path(config.run.out)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    batch = config.run.batch if batch is None else batch
    summary = RunSummary(out=str(out), cap_usd=cap)
    preflight(config, cap)
    with run_lock(out):
        cache_dir = Path(config.run.cache_dir)
        store = ItemStore(cache_dir / "items")
        attention: list[str] = []
        decls, _ = extract_sources(config)
        oracles = build_oracles(config, {d.lang for d in decls}, VerdictCache(cache_dir / "verdicts"), attention)
        responses = ResponseCache(cache_dir / "llm")
        prices = PriceTable(config.run.prices) if config.run.prices else None
        recover_crashed_ledgers(out / "ledgers", responses)
        run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        client = LLMClient(Ledger(out / "ledgers" / f"{run_id}.sqlite", cap), responses, prices, seed=config.run.seed)
        pending = collect_batches(out, responses, prices)  # earlier runs' batch answers -> the response cache
        if pending:
            attention.append(f"{pending} batch(es) still running at the provider; the next refresh collects them")
        ctx = Context(store=store, oracles=oracles, client=client, seed=config.run.seed, attention=attention)
        if on_item:
            ctx.on_item = lambda stage, note: on_item(stage, note, client.ledger.totals().committed_usd)
        if batch:
            ctx.client = DeferringClient(client, ctx.deferred)
        specs = _model_specs(config)
        outputs: dict[str, StageOutput] = {}
        spend_by_stage: dict[str, float] = {}
        mark = {"t": time.perf_counter(), "compiled": 0}

        def finish(name: str, output: StageOutput):
            outputs[name] = output
            spend_by_stage[name] = round(client.ledger.totals().committed_usd - sum(spend_by_stage.values()), 6)
            compiled = sum(o.stats.candidates_compiled for o in oracles.values())
            output.extra.update(seconds=round(time.perf_counter() - mark["t"], 3),
                                candidates_compiled=compiled - mark["compiled"])
            mark.update(t=time.perf_counter(), compiled=compiled)
            if progress:
                progress(name, output, client.ledger.totals().committed_usd)

        paid_ok = cap > 0
        stages = config.stages
        if stages.repair.enabled:
            finish("repair", repair_stage(ctx, decls, stages.repair))
        if stages.doclane.enabled:
            finish("doclane", doclane_stage(ctx, decls, stages.doclane))
        for name in PAID_STAGES:
            stage = getattr(stages, name)
            if not stage.enabled:
                summary.skipped[name] = "disabled in the config"
                continue
            free = all(config.models[m].free for m in filter(None, [stage.model, getattr(stage, "judge", None)]))
            if not (paid_ok or free):
                summary.skipped[name] = "needs a paid model and the spending cap is $0 (set --max-spend)"
                continue
            if name == "backtranslate":
                finish(name, backtranslate_stage(ctx, decls, stage, specs, str(cache_dir / "graphs.sqlite")))
            elif name == "rft":
                if "backtranslate" not in outputs:
                    summary.skipped[name] = "needs the backtranslate stage's instructions"
                    continue
                finish(name, rft_stage(ctx, decls, outputs["backtranslate"].rows, stage, specs))
            else:
                finish(name, toolcalls_stage(ctx, stage, specs))
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
        if stages.doclane.enabled:
            from synth.assemble.tasks import split_outputs
            lanes = [outputs[n] for n in ("doclane", "backtranslate") if n in outputs]
            summary.notes.append(f"tasks: {split_outputs(out, lanes, **stages.doclane.model_dump(exclude={'enabled'}), seed=config.run.seed)}")
        write_outputs(out, outputs)
        snapshot_dir, diff = write_snapshot(out, config)
        totals = client.ledger.totals()
        summary.stages = {name: {**o.funnel(), "model": o.model, "spent_usd": spend_by_stage.get(name, 0.0),
                                 **{k: v for k, v in o.extra.items() if k != "codes"}}
                          for name, o in outputs.items()}
        summary.spent_usd = round(totals.committed_usd, 6)
        summary.llm_calls = client.stats.calls
        summary.llm_cache_hits = client.stats.cache_hits
        summary.compiler_runs = sum(o.stats.compiler_runs for o in oracles.values())
        summary.candidates_compiled = sum(o.stats.candidates_compiled for o in oracles.values())
        summary.snapshot, summary.diff = str(snapshot_dir), diff
        summary.paths = {"rows": sorted(str(p) for p in (out / "rows").glob("*.jsonl")),
                         "rejected": sorted(str(p) for p in (out / "rejected").glob("*.jsonl")),
                         **{name: str(out / f"{name}.jsonl") for name in ("train", "val")},
                         "manifest": str(out / "manifest.json"), "stats": str(out / "stats" / "run.json")}
        for name, o in outputs.items():
            if o.undone and batch and summary.batch_submitted:
                summary.notes.append(f"{name}: {o.undone} item(s) wait for batch answers (the next refresh uses them)")
            elif o.undone:
                attention.append(f"{name}: {o.undone} item(s) left undone (spending cap, failed calls or batch "
                                 "answers pending); the next run continues them")
        summary.attention = attention
        write_stats(out, summary, outputs)
        store.close()
    return summary


def collect_batches(out: Path, responses, prices) -> int:
    """Collect every earlier run's submitted batches into the response cache, settling each answer
    in the ledger of the run that reserved it. Returns the number still running."""
    from synth.llm.batch import BatchRunner
    from synth.llm.client import LLMClient
    from synth.llm.ledger import Ledger
    pending = 0
    for state in sorted((out / "batches").glob("*.sqlite")) if (out / "batches").is_dir() else []:
        ledger = Ledger(out / "ledgers" / state.name, 0.0)  # settling needs no cap
        pending += BatchRunner(LLMClient(ledger, responses, prices), state).collect().pending
    return pending


def recover_crashed_ledgers(directory: Path, cache) -> None:
    """A run killed mid-call leaves reservations open in its ledger: settle those the response
    cache shows were answered, keep the rest as lost (at their worst case), so the record of what
    was spent stays true."""
    from synth.llm.client import LLMClient
    from synth.llm.ledger import Ledger
    for path in sorted(directory.glob("*.sqlite")) if directory.is_dir() else []:
        ledger = Ledger(path, 0.0)
        if ledger.totals().calls_open:
            LLMClient(ledger, cache).recover()


def write_outputs(out: Path, outputs: dict[str, StageOutput]) -> None:
    rows_by_task: dict[str, list[Row]] = {}
    rejected_by_stage: dict[str, list[dict]] = {}
    for name, output in outputs.items():
        for row in output.rows:
            rows_by_task.setdefault(row.task, []).append(row)
        rejected_by_stage[name] = output.rejected
        if output.pairs:
            write_jsonl(out / "pairs" / f"{name}.jsonl", output.pairs)
    for stale in (out / "rows").glob("*.jsonl") if (out / "rows").is_dir() else []:
        if stale.stem not in rows_by_task:
            stale.unlink()
    for task, rows in rows_by_task.items():
        write_jsonl(out / "rows" / f"{task}.jsonl", sorted(rows, key=lambda r: r.id))
    for name, rejected in rejected_by_stage.items():
        write_jsonl(out / "rejected" / f"{name}.jsonl", rejected)


def write_snapshot(out: Path, config: SynthConfig) -> tuple[Path, dict]:
    """Assemble rows/ into a new numbered snapshot, copy it to the run directory's top level,
    and diff it against the previous snapshot."""
    from synth.assemble.mix import Dedup, Mix, Source
    from synth.assemble.snapshot import assemble
    from synth.assemble.snapshot import write_snapshot as write_snap

    snapshots = out / "snapshots"
    previous = sorted(p for p in snapshots.glob("[0-9]*") if (p / "train.jsonl").exists()) \
        if snapshots.is_dir() else []
    number = int(previous[-1].name) + 1 if previous else 1
    target = snapshots / f"{number:04d}"
    files = sorted((out / "rows").glob("*.jsonl")) if (out / "rows").is_dir() else []
    mix = Mix(sources=[Source(name=f.stem, path=str(f)) for f in files] or [Source(name="none", path=str(out / "rows"),
                                                                                   optional=True)],
              val_share={"default": config.assemble.val_share}, seq_len=config.assemble.seq_len,
              seed=config.run.seed, dedup=Dedup(near_duplicates=config.assemble.near_duplicates))
    snap = assemble(mix)
    write_snap(snap, target, parquet=False)
    diff = diff_snapshots(previous[-1] if previous else None, target)
    write_json(target / "diff.json", diff)
    for name in ("train.jsonl", "val.jsonl", "manifest.json"):
        (out / name).write_bytes((target / name).read_bytes())
    return target, diff


def _identity(row: dict) -> tuple:
    """What a row is about: its declaration's place (not content), stage and operator; for tool
    rows, the request."""
    prov = row.get("provenance", {})
    where = row.get("decl_key") or f"{prov.get('source_path')}#{prov.get('decl_hash')}"
    return (row.get("lane"), row.get("task"), where, prov.get("stage"), prov.get("operator") or "",
            row.get("prompt") if row.get("task", "").startswith("tool") else "")


def diff_snapshots(old: Path | None, new: Path) -> dict:
    """Rows added, removed and changed (same declaration, stage and operator; other content), by lane."""
    def load(path):
        if path is None:
            return {}
        rows = read_jsonl(path / "train.jsonl") + read_jsonl(path / "val.jsonl")
        grouped: dict[tuple, set] = {}
        for row in rows:  # by full content: a re-verified row (new toolchain) is a changed row
            grouped.setdefault(_identity(row), set()).add(json.dumps(row, sort_keys=True))
        return grouped
    before, after = load(old), load(new)
    counts = {"added": Counter(), "removed": Counter(), "changed": Counter()}
    for key in set(before) | set(after):
        lane = key[0]
        if key not in before:
            counts["added"][lane] += len(after[key])
        elif key not in after:
            counts["removed"][lane] += len(before[key])
        else:
            fresh, gone = len(after[key] - before[key]), len(before[key] - after[key])
            changed = min(fresh, gone)  # a row about the same thing with other content
            counts["changed"][lane] += changed
            counts["added"][lane] += fresh - changed
            counts["removed"][lane] += gone - changed
    return {"previous": old.name if old else None, "snapshot": new.name,
            **{k: dict(sorted(v.items())) for k, v in counts.items()},
            "total": {k: sum(v.values()) for k, v in counts.items()}}


def write_stats(out: Path, summary: RunSummary, outputs: dict[str, StageOutput]) -> None:
    codes = Counter()
    for output in outputs.values():
        for row in output.rows:
            codes.update(getattr(row, "diagnostic_codes", None) or [])
    stats = {
        "summary": summary.as_dict(),
        # In the stage's own unit (a mutant, an instruction, a sample, a tool request): everything
        # considered, what went through the gate (kept or rejected, not left undone), what was kept.
        "funnel": {name: {"candidates": len(o.rows) + len(o.rejected) + o.undone + o.no_oracle,
                          "gated": len(o.rows) + len(o.rejected), "kept": len(o.rows)}
                   for name, o in outputs.items()},
        "rejections": {name: dict(o.reasons().most_common()) for name, o in outputs.items()},
        "diagnostic_codes": dict(codes.most_common()),
        "cost": [{"stage": name, "model": o.model or "-", "usd": summary.stages[name]["spent_usd"]}
                 for name, o in outputs.items()],
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(out / "stats" / "run.json", stats)


def last_stats(out: str | Path) -> dict | None:
    path = Path(out) / "stats" / "run.json"
    return json.loads(path.read_text()) if path.exists() else None
