"""The synthesis stages as the pipeline runs them: each takes the items of this run, processes
only those the item store has no answer for (new or changed content, or a changed stage
fingerprint), stores what each item produced, and returns the rows of all items.

The stage logic itself lives in synth/mutate, synth/graphs and synth/tools; here it is only
split into items and recombined. Items left undone (the spend cap, a failed call, a batch
answer not back yet) are not stored, so the next run picks them up."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from synth.extract.model import Declaration
from synth.llm.client import BudgetExceeded, CallFailed, LLMClient, LLMRequest
from synth.prompts import template_hash
from synth.rows import Row

from .store import ItemStore, fingerprint


class Deferred(BudgetExceeded):
    """Batch mode: the request was queued for the batch API; its answer comes in a later run."""


@dataclass
class StageOutput:
    name: str
    rows: list[Row] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    items: int = 0  # items this run had for the stage
    processed: int = 0  # of which new or changed (worked on)
    reused: int = 0  # of which answered by the item store
    undone: int = 0  # of which left for a later run
    no_oracle: int = 0  # of which not processed: their language's oracle is missing
    model: str | None = None
    extra: dict = field(default_factory=dict)

    def funnel(self) -> dict:
        return {"items": self.items, "processed": self.processed, "reused": self.reused, "undone": self.undone,
                "no_oracle": self.no_oracle, "rows": len(self.rows), "rejected": len(self.rejected)}

    def reasons(self) -> Counter:
        return Counter(_reason_kind(r) for r in self.rejected)


def _reason_kind(rejected: dict) -> str:
    reason = str(rejected.get("reason") or rejected.get("check") or "unknown")
    return reason.split(":")[0].split(" (")[0][:60]


@dataclass
class Context:
    store: ItemStore
    oracles: dict  # lang -> oracle (only languages whose oracle is available)
    client: LLMClient | None
    seed: int
    attention: list[str] = field(default_factory=list)  # what needs a person
    on_item: object = None  # on_item(stage, note): an item finished (progress display)
    deferred: list[LLMRequest] = field(default_factory=list)  # batch mode: requests to submit

    def ticker(self, stage: str):
        return (lambda note: self.on_item(stage, note)) if self.on_item else None


class DeferringClient:
    """Batch mode: answers from the response cache, queues everything else for the batch API."""

    def __init__(self, client: LLMClient, queue: list[LLMRequest]):
        self.client, self.queue = client, queue
        self.cache, self.ledger, self.stats = client.cache, client.ledger, client.stats

    def complete(self, req: LLMRequest):
        # Cached answers as usual; several samples in one request (RFT's `n`) are not something the
        # batch APIs take, so those are made online (under the same cap).
        if req.n > 1 or all(self.client.cache.get(req.key(i)) for i in range(req.n)):
            return self.client.complete(req)
        self.queue.append(req)
        raise Deferred("queued for the batch API; answered in a later run")


def _rows_json(rows: list[Row]) -> list[dict]:
    return [r.model_dump(mode="json") for r in rows]


def _rows(stored: list[dict]) -> list[Row]:
    return [Row.model_validate(r) for r in stored]


def decl_key(decl: Declaration) -> str:
    """Where a declaration lives, not what it says: a row keeps it across edits, so a snapshot diff
    can tell a changed row from an added one."""
    owner = f"{decl.self_type}::" if decl.self_type else ""
    return f"{decl.path}::{decl.kind}::{owner}{decl.name}"


def item_key(decl: Declaration) -> str:
    """What a declaration's rows depend on: its place, content and context; not its byte offset,
    which moves when an earlier declaration in the file is edited."""
    return fingerprint(decl_key(decl), decl.hash, decl.context, decl.wrapper_head, decl.wrapper_tail)


def _stamped(row: Row, decl: Declaration) -> dict:
    return {**row.model_dump(mode="json"), "decl_key": decl_key(decl)}


def toolchain_of(oracle) -> str:
    return getattr(oracle, "toolchain", "none")


# -- fingerprints: what a stored item's answer depends on (shared with `synth plan`) --------------

def repair_fingerprint(ctx, lang, settings, oracle) -> str:
    return fingerprint("repair", lang, ctx.seed, settings.diff, toolchain_of(oracle), oracle.flags,
                       template_hash("repair"))


def backtranslate_fingerprint(ctx, settings, specs, oracle) -> str:
    judge = specs[settings.judge] if settings.judge else None
    return fingerprint("backtranslate", specs[settings.model], judge, settings.max_attempts, ctx.seed,
                       toolchain_of(oracle), [template_hash(t) for t in ("backtranslate_instruction",
                                                                       "backtranslate_regenerate",
                                                                       "backtranslate_judge")])


def rft_fingerprint(ctx, settings, specs, oracle) -> str:
    return fingerprint("rft", specs[settings.model], settings.k, settings.cap_per_task, ctx.seed,
                       toolchain_of(oracle), template_hash("rft"))


def rft_task_key(task) -> str:
    return fingerprint(item_key(task.decl), task.prompt)


def toolcalls_fingerprint(ctx, settings, specs) -> str:
    return fingerprint("toolcalls", specs[settings.model], settings.per_tool, settings.k, ctx.seed,
                       settings.server, template_hash("toolcall"))


def repair_items(decls: list[Declaration], lang: str) -> list[Declaration]:
    from synth.mutate.repair import ELIGIBLE_KINDS
    return [d for d in decls if d.lang == lang and d.kind in ELIGIBLE_KINDS[lang] and not d.near_parse_error]


def _by_language(ctx: Context, out: StageOutput, items: list, lang_of):
    """(language, its items, its oracle) for each language present; items whose language has no
    oracle are counted as such (the run says once that the oracle is missing)."""
    for lang in ("rust", "vox"):
        mine = [x for x in items if lang_of(x) == lang]
        if not mine:
            continue
        if ctx.oracles.get(lang) is None:
            out.no_oracle += len(mine)
            continue
        yield lang, mine, ctx.oracles[lang]


def _split_store(ctx: Context, out: StageOutput, stage: str, stage_fp: str, items: list, key) -> list:
    """The items the store has no answer for (to process now); counts processed and reused."""
    todo = [x for x in items if ctx.store.get(stage, stage_fp, key(x)) is None]
    out.processed += len(todo)
    out.reused += len(items) - len(todo)
    return todo


# -- repair ------------------------------------------------------------------------------------

def repair_stage(ctx: Context, decls: list[Declaration], settings) -> StageOutput:
    from synth.mutate.repair import RepairConfig, balance, repair_rows

    out = StageOutput("repair")
    # No balancing per item: it is done once below, over the rows of all items.
    config = RepairConfig(seed=ctx.seed, max_share=1.0, diff=settings.diff, operator_caps={})
    all_rows: list[Row] = []
    items = repair_items(decls, "rust") + repair_items(decls, "vox")
    out.items = len(items)
    for lang, eligible, oracle in _by_language(ctx, out, items, lambda d: d.lang):
        stage_fp = repair_fingerprint(ctx, lang, settings, oracle)
        todo = _split_store(ctx, out, "repair", stage_fp, eligible, item_key)
        if todo:
            result = repair_rows(todo, oracle, config, lang=lang)
            by_decl = {d.id: {"rows": [], "rejected": []} for d in todo}
            decl_of = {(d.path, d.hash): d for d in todo}
            for row in result.rows:
                decl = decl_of[(row.provenance.source_path, row.provenance.decl_hash)]
                by_decl[decl.id]["rows"].append(_stamped(row, decl))
            for rejected in result.rejected:
                if rejected.get("decl") in by_decl:
                    by_decl[rejected["decl"]]["rejected"].append({"lang": lang, **rejected})
            for d in todo:
                ctx.store.put("repair", stage_fp, item_key(d), by_decl[d.id])
        for d in eligible:
            item = ctx.store.get("repair", stage_fp, item_key(d))
            all_rows += _rows(item["rows"])
            out.rejected += item["rejected"]
    kept, dropped = balance(all_rows, settings.max_share, ctx.seed, RepairConfig().operator_caps)
    out.rows = sorted(kept, key=lambda r: (r.provenance.source_path, r.provenance.decl_hash, r.operator))
    out.rejected += [{"decl": r.provenance.decl_hash, "operator": r.operator, "row_id": r.id,
                      "reason": f"balance: over {settings.max_share:.0%} share"} for r in dropped]
    out.extra["codes"] = dict(Counter(c for r in out.rows for c in r.diagnostic_codes).most_common())
    return out


# -- doc lane ------------------------------------------------------------------------------------

def doclane_stage(ctx: Context, decls: list[Declaration], settings) -> StageOutput:
    """No item store: one batched check of every documented function (the verdict cache answers
    the unchanged ones)."""
    from synth.docs.lane import doc_candidates, doc_lane

    out = StageOutput("doclane")
    items = doc_candidates(decls)
    out.items = len(items)
    if ctx.oracles.get("rust") is None:
        out.no_oracle = len(items)
        return out
    out.rows, out.rejected = doc_lane(items, ctx.oracles["rust"], ctx.seed)
    out.processed = len(items)
    return out


# -- back-translation ----------------------------------------------------------------------------

BACKTRANSLATE_KINDS = {"rust": ("fn", "method"), "vox": ("fn",)}


def backtranslate_items(decls: list[Declaration], limit: int) -> list[Declaration]:
    items = sorted((d for d in decls if d.kind in BACKTRANSLATE_KINDS.get(d.lang, ()) and not d.near_parse_error),
                   key=decl_key)  # by place: an edit elsewhere does not change which ones `limit` takes
    return items[:limit] if limit else items


def backtranslate_stage(ctx: Context, decls: list[Declaration], settings, specs: dict, checkpoint: str
                        ) -> StageOutput:
    from synth.graphs.backtranslate import BacktranslateConfig, run_backtranslation

    writer = specs[settings.model]
    judge = specs[settings.judge] if settings.judge else None
    out = StageOutput("backtranslate", model=writer.model)
    items = backtranslate_items(decls, settings.limit)
    out.items = len(items)
    config = BacktranslateConfig(writer=writer, judge=judge, max_attempts=settings.max_attempts,
                                 workers=settings.workers, seed=ctx.seed)
    for _, mine, oracle in _by_language(ctx, out, items, lambda d: d.lang):
        stage_fp = backtranslate_fingerprint(ctx, settings, specs, oracle)
        todo = _split_store(ctx, out, "backtranslate", stage_fp, mine, item_key)
        if todo:
            result = run_backtranslation(todo, ctx.client, oracle, config, checkpoint_path=checkpoint,
                                         on_item=ctx.ticker("backtranslate"))
            calls = Counter(out.extra.get("node_calls", {}))
            calls.update({k: result.stats[k] for k in ("write", "regenerate", "judge")})
            out.extra["node_calls"] = dict(calls)
            out.extra["accepted"] = out.extra.get("accepted", 0) + len(result.rows)
            undone = set(result.undone)
            out.undone += len(undone)
            decl_of = {(d.path, d.hash): d for d in todo}
            by_decl = {d.id: {"rows": [], "rejected": []} for d in todo}
            for row in result.rows:
                decl = decl_of[(row.provenance.source_path, row.provenance.decl_hash)]
                by_decl[decl.id]["rows"].append(_stamped(row, decl))
            for rejected in result.rejected:
                if rejected.get("decl") in by_decl and rejected["decl"] not in undone:
                    by_decl[rejected["decl"]]["rejected"].append(rejected)
            for d in todo:
                if d.id not in undone:
                    ctx.store.put("backtranslate", stage_fp, item_key(d), by_decl[d.id])
        for d in mine:
            item = ctx.store.get("backtranslate", stage_fp, item_key(d))
            if item is not None:
                out.rows += _rows(item["rows"])
                out.rejected += item["rejected"]
    out.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))
    return out


# -- rejection sampling --------------------------------------------------------------------------

class _SafeSampler:
    """A sampler that turns a refused or failed call into no samples, and remembers it."""

    def __init__(self, inner):
        self.inner, self.name, self.failed = inner, inner.name, set()

    def sample(self, prompt: str, k: int) -> list[str]:
        try:
            return self.inner.sample(prompt, k)
        except (BudgetExceeded, CallFailed):
            self.failed.add(prompt)
            return []


def rft_tasks(decls: list[Declaration], codegen_rows: list[Row]) -> list:
    """An RFT task per accepted back-translated instruction."""
    from synth.graphs.rft import task_from_instruction
    by_key = {(d.path, d.hash): d for d in decls}
    tasks = []
    for row in codegen_rows:
        decl = by_key.get((row.provenance.source_path, row.provenance.decl_hash))
        if decl is not None and getattr(row, "instruction", None):
            tasks.append(task_from_instruction(decl, row.instruction))
    return tasks


def rft_stage(ctx: Context, decls: list[Declaration], codegen_rows: list[Row], settings, specs: dict
              ) -> StageOutput:
    from synth.graphs.rft import ApiSampler, RftConfig, run_rft

    spec = specs[settings.model]
    out = StageOutput("rft", model=spec.model)
    tasks = rft_tasks(decls, codegen_rows)
    out.items = len(tasks)
    config = RftConfig(k=settings.k, cap_per_task=settings.cap_per_task, seed=ctx.seed)
    key = rft_task_key
    for _, mine, oracle in _by_language(ctx, out, tasks, lambda t: t.decl.lang):
        stage_fp = rft_fingerprint(ctx, settings, specs, oracle)
        todo = _split_store(ctx, out, "rft", stage_fp, mine, key)
        if todo:
            sampler = _SafeSampler(ApiSampler(ctx.client, spec))
            result = run_rft(todo, sampler, oracle, config, on_item=ctx.ticker("rft"))
            for task in todo:
                if task.prompt in sampler.failed:
                    out.undone += 1
                    continue
                rows = [r for r in result.rows if r.prompt == task.prompt]
                pairs = [p for p in result.pairs if p["task"] == task.id and p["prompt"] == task.prompt]
                stats = [t for t in result.tasks if t["task"] == task.id]
                rejected = [] if rows else [{"task": task.id, "reason": "no sample passed", **(stats[0] if stats else {})}]
                ctx.store.put("rft", stage_fp, key(task), {"rows": [_stamped(r, task.decl) for r in rows],
                                                           "pairs": pairs,
                                                           "rejected": rejected})
        for task in mine:
            item = ctx.store.get("rft", stage_fp, key(task))
            if item is not None:
                out.rows += _rows(item["rows"])
                out.pairs += item["pairs"]
                out.rejected += item["rejected"]
    return out


# -- tool calls ----------------------------------------------------------------------------------

def toolcalls_stage(ctx: Context, settings, specs: dict) -> StageOutput:
    from synth.tools.definitions import load_tools_file, validate_definitions
    from synth.tools.stage import ToolStageConfig, run_tool_stage

    spec = specs[settings.model]
    out = StageOutput("toolcalls", model=spec.model)
    raw = load_tools_file(settings.tools)
    tools, problems = validate_definitions(raw)
    out.rejected += [{"check": "definition", "reason": p} for p in problems]
    out.items = len(tools)
    # The whole tool set is one item: selection rows offer negatives from every tool. A changed tool
    # re-runs the set, and only the changed tool's requests are new (the rest come from the cache).
    stage_fp = toolcalls_fingerprint(ctx, settings, specs)
    set_key = fingerprint(raw)
    item = ctx.store.get("toolcalls", stage_fp, set_key)
    if item is None:
        out.processed = len(tools)
        server = (settings.server[0], list(settings.server[1:])) if settings.server else None
        result = run_tool_stage(tools, ctx.client, spec, ToolStageConfig(k=settings.k, per_tool=settings.per_tool,
                                                                         seed=ctx.seed, server=server),
                                on_item=ctx.ticker("toolcalls"))
        item = {"rows": _rows_json(result.rows), "rejected": result.rejected}
        undone = result.rejections.get("not generated", 0)
        if undone:
            out.undone = undone
        else:
            ctx.store.put("toolcalls", stage_fp, set_key, item)
    else:
        out.reused = len(tools)
    out.rows += _rows(item["rows"])
    out.rejected += item["rejected"]
    return out
