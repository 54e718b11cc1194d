"""What every lane is, and the one loop that runs any of them.

A lane is one kind of work `synth run` does: it names its settings (its `[lanes.<name>]` table), says
whether it pays, lists the items of this run (declarations, tasks, tool sets) with their keys,
fingerprints everything that changes its output, processes the items the item store has no
answer for, and prices what it would do (`plan`). `run`, `plan` and `refresh` loop over the
registry in `synth/lanes/__init__.py` and never name a lane; `run_lane` below is that loop's
body. Items left undone (the spend cap, a failed call, a batch answer not back yet) are not
stored, so the next run picks them up."""
from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from oracles.errors import SynthError
from synth.extract.model import Declaration
from synth.settings.fit import Fit
from synth.lanes.fingerprint import lane_fingerprint
from synth.rows.keys import fingerprint
from synth.rows.store import ItemStore, StoreLost
from synth.rows.rejection import Rejection
from synth.rows.held import HeldRow
from synth.rows.row import Row
from synth.settings.strict import LaneSettings


@dataclass
class LaneOutput:
    name: str
    rows: list[Row | HeldRow] = field(default_factory=list)  # rows from the item store are held (synth/rows/held.py)
    rejected: list[Rejection] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    items: int = 0  # items this run had for the lane
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
        return Counter(r.kind for r in self.rejected)


@dataclass
class RunContext:
    """What a lane gets from the run: the item store, an oracle per language (only those
    available), the spend-gated client, the models of the config, and what earlier lanes made."""
    store: ItemStore
    oracles: dict
    client: object | None
    seed: int
    models: dict = field(default_factory=dict)  # name -> ModelSettings
    settings: dict = field(default_factory=dict)  # lane name -> its settings
    crate_oracle: object = None  # Rust declarations whose standalone file fails: checked in their crate
    cache_dir: str = "cache"
    out: str = ""
    attention: list[str] = field(default_factory=list)  # what needs a person
    on_item: object = None  # on_item(lane, note): an item finished (progress display)
    deferred: list = field(default_factory=list)  # batch mode: requests to submit
    outputs: dict = field(default_factory=dict)  # name -> LaneOutput of the lanes run so far
    fit: Fit = field(default_factory=Fit)  # [tokens]: what fits the model being trained
    tasks: object = None  # [tasks]: which crates are held out (their tasks are never trained on)
    task_lanes: tuple[str, ...] = ()  # the registered lanes whose rows pose tasks, in run order
    roots: dict = field(default_factory=dict)  # crate name -> its folder: where a task's crate tests run
    crate_tests: object = None  # () -> the oracle that runs a crate's own tests, built when a lane asks

    def task_rows(self) -> list:
        """The rows of the lanes run so far that pose tasks, in run order."""
        return [row for name in self.task_lanes if name in self.outputs for row in self.outputs[name].rows]

    def ticker(self, lane: str):
        return (lambda note: self.on_item(lane, note)) if self.on_item else None


class Lane:
    """The lane protocol, with the defaults most lanes want. Subclasses set `name` and
    `Settings` and implement `items`, `process` and `plan`."""
    name: ClassVar[str]
    Settings: ClassVar[type[LaneSettings]] = LaneSettings
    needs: ClassVar[tuple[str, ...]] = ()  # lanes whose rows this lane reads (they run first)
    poses_tasks: ClassVar[bool] = False  # its rows can be RL and held-out tasks ([tasks])
    tasks_by_default: ClassVar[bool] = False  # with it enabled, tasks are written unless [tasks] enabled = false
    chunk: ClassVar[int] = 0  # > 0: `process` gets the items this many at a time, each part stored as it ends

    def pays(self, settings: LaneSettings, models: dict) -> bool:
        """Whether the lane calls a model that is not free; the plan and the run both ask this."""
        return any(not models[ref].free for ref in settings.model_refs())

    def skip_reason(self, settings: LaneSettings, models: dict, cap: float, done: dict) -> str | None:
        """Why the lane does not run now (None: it runs); `done`: the lanes run (or planned) so far.
        The plan and the run both ask this, so they agree on what is free."""
        if not settings.enabled:
            return "disabled in the config"
        if cap <= 0 and self.pays(settings, models):
            return "needs a paid model and the spending cap is $0 (set --max-spend)"
        missing = [need for need in self.needs if need not in done]
        return f"needs the {missing[0]} lane's rows" if missing else None

    def model_name(self, settings: LaneSettings, models: dict) -> str | None:
        refs = settings.model_refs()
        return models[refs[0]].model if refs else None

    def items(self, ctx: RunContext, settings, decls: list[Declaration]) -> list:
        raise NotImplementedError

    def key(self, item) -> str:
        """What an item's rows depend on (the item store's key)."""
        return item_key(item)

    def lang(self, item) -> str | None:
        """The language whose oracle checks the item; None: the lane needs no oracle."""
        return item.lang

    def size(self, item) -> int:
        """How many items one stored item counts for in the funnel."""
        return 1

    def parts(self, todo: list) -> list[list]:
        """The pending items as `process` gets them, each part stored as it ends: `chunk` at a
        time, or all at once."""
        if not self.chunk:
            return [todo] if todo else []
        return [todo[i:i + self.chunk] for i in range(0, len(todo), self.chunk)]

    def units(self, part: list) -> dict[str, list]:
        """The smallest pieces of a part `process` takes alone, by name: a part that fails is done
        again piece by piece, so one bad piece is left undone, not the whole run. Each item, here."""
        return {self.key(item): [item] for item in part}

    def early_rejects(self, item) -> list[Rejection]:
        """What an item is refused for before any work (e.g. a tool definition that does not validate)."""
        return []

    def fingerprint(self, ctx: RunContext, settings, lang: str | None, oracle) -> str:
        """What only this lane knows its items depend on, beyond what `lane_fingerprint` derives
        for every lane (synth/lanes/fingerprint.py): nothing, for most lanes."""
        return ""

    def process(self, ctx: RunContext, settings, todo: list, oracle, out: LaneOutput) -> dict:
        """key -> {"rows": [...], "rejected": [...], "pairs"?: [...]} for each item done, as JSON
        (rows dumped, rejections `Rejection.to_json`); an item left out of the answer is undone (not
        stored, picked up by the next run)."""
        raise NotImplementedError

    def collect(self, stored: dict, out: LaneOutput) -> None:
        """Add one stored item's results to the lane's output."""
        out.rows += [HeldRow.of(Row.model_validate(r)) for r in stored["rows"]]  # held compressed: a night's rows fit in memory
        out.rejected += [Rejection.from_json(r) for r in stored["rejected"]]
        out.pairs += stored.get("pairs", [])

    def finish(self, ctx: RunContext, settings, out: LaneOutput, items: list) -> None:
        """After every item: ordering, balancing across items, counters."""

    def plan_items(self, ctx: RunContext, settings, decls: list[Declaration], estimate) -> list:
        """The items a plan prices (a lane fed by another lane's rows knows fewer before the run)."""
        return self.items(ctx, settings, decls)

    def plan(self, ctx: RunContext, settings, pending: list, estimate) -> dict:
        """A plan row (see synth/lanes/estimate.py `plan_row`) for the pending items."""
        raise NotImplementedError


def by_language(lane: Lane, ctx: RunContext, items: list, out: LaneOutput | None = None):
    """(language, its items, its oracle) for each language present, in a fixed order; items whose
    language has no oracle are counted as such (the run says once that the oracle is missing)."""
    for lang in sorted({lane.lang(x) for x in items}, key=lambda lang: lang or ""):
        mine = [x for x in items if lane.lang(x) == lang]
        if lang is None:
            yield None, mine, None
        elif ctx.oracles.get(lang) is None:
            if out is not None:
                out.no_oracle += sum(lane.size(x) for x in mine)
        else:
            yield lang, mine, ctx.oracles[lang]


def pending(lane: Lane, ctx: RunContext, settings, items: list) -> list:
    """The items the item store has no answer for: what a run would process now."""
    todo = []
    for lang, mine, oracle in by_language(lane, ctx, items):
        lane_fp = lane_fingerprint(lane, ctx, settings, lang, oracle)
        todo += [x for x in mine if ctx.store.get(lane.name, lane_fp, lane.key(x)) is None]
    return todo


def run_lane(lane: Lane, ctx: RunContext, settings, decls: list[Declaration]) -> LaneOutput:
    out = LaneOutput(lane.name, model=lane.model_name(settings, ctx.models))
    items = lane.items(ctx, settings, decls)
    out.items = sum(lane.size(x) for x in items)
    out.rejected += [r for x in items for r in lane.early_rejects(x)]
    for lang, mine, oracle in by_language(lane, ctx, items, out):
        lane_fp = lane_fingerprint(lane, ctx, settings, lang, oracle)
        todo = [x for x in mine if ctx.store.get(lane.name, lane_fp, lane.key(x)) is None]
        out.processed += sum(lane.size(x) for x in todo)
        out.reused += sum(lane.size(x) for x in mine) - sum(lane.size(x) for x in todo)
        undone = set()
        for part in lane.parts(todo):
            done = answers(lane, ctx, settings, part, oracle, out)
            for item in part:  # stored as each part ends: a killed run keeps the parts it finished
                if lane.key(item) in done:
                    ctx.store.put(lane.name, lane_fp, lane.key(item), done[lane.key(item)])
                else:
                    out.undone += lane.size(item)
                    undone.add(lane.key(item))
        lost = []
        for item in mine:
            stored = ctx.store.get(lane.name, lane_fp, lane.key(item))
            if stored is not None:
                lane.collect(stored, out)
            elif lane.key(item) not in undone:  # stored, and gone: its rows would be missing unsaid
                lost.append(lane.key(item))
        if lost:
            raise StoreLost(f"the item store ({ctx.store.directory}) no longer holds {len(lost)} of the {lane.name} "
                            f"lane's answers it was given (first: {lost[0]}); run again to redo them")
    lane.finish(ctx, settings, out, items)
    return out


def answers(lane: Lane, ctx: RunContext, settings, part: list, oracle, out: LaneOutput) -> dict:
    """`lane.process` of a part. A part that fails is done again unit by unit (a crate, in the
    repair lane): a unit that fails is left undone and named in `ctx.attention` (the run exits 1),
    the night goes on, and the next run tries it again. A part of one unit is not done twice. An
    error synth raises on purpose says what the user must do, and stops the run."""
    try:
        return lane.process(ctx, settings, part, oracle, out)
    except (SynthError, MemoryError):
        raise
    except Exception as exc:  # a defect, or a machine's hiccup: found below, unit by unit
        units = lane.units(part)
        if len(units) == 1:  # nothing smaller to try
            _left_undone(ctx, lane, next(iter(units)), exc)
            return {}
    done = {}
    for name, unit in units.items():
        try:
            done.update(lane.process(ctx, settings, unit, oracle, out))
        except (SynthError, MemoryError):
            raise
        except Exception as exc:
            _left_undone(ctx, lane, name, exc)
    return done


def _left_undone(ctx: RunContext, lane: Lane, name: str, exc: Exception) -> None:
    """A unit that failed, under "needs attention": its error and where it was raised."""
    where = traceback.extract_tb(exc.__traceback__)[-1]
    ctx.attention.append(f"{lane.name}: {name} failed ({type(exc).__name__}: {str(exc)[:300]}, at "
                         f"{Path(where.filename).name}:{where.lineno}); left undone, the next run tries it again")


# -- keys ----------------------------------------------------------------------------------------

def decl_key(decl: Declaration) -> str:
    """Where a declaration lives, not what it says: a row keeps it across edits, so a snapshot diff
    can tell a changed row from an added one."""
    owner = f"{decl.self_type}::" if decl.self_type else ""
    return f"{decl.path}::{decl.kind}::{owner}{decl.name}"


def item_key(decl: Declaration) -> str:
    """What a declaration's rows depend on: its place, content and context; not its byte offset,
    which moves when an earlier declaration in the file is edited."""
    return fingerprint(decl_key(decl), decl.hash, decl.context, decl.wrapper_head, decl.wrapper_tail)


def stamped(row: Row, decl: Declaration) -> dict:
    return {**row.model_dump(mode="json"), "decl_key": decl_key(decl)}


def by_declaration(todo: list[Declaration], rows: list[Row], rejected: list[Rejection], lang: str | None = None,
                   skip: set | None = None) -> dict:
    """Each declaration's share of an engine's result, as the item store keeps it."""
    decl_of = {(d.path, d.hash): d for d in todo}
    out = {d.id: {"rows": [], "rejected": []} for d in todo if d.id not in (skip or set())}
    for row in rows:
        decl = decl_of[(row.provenance.source_path, row.provenance.decl_hash)]
        if decl.id in out:
            out[decl.id]["rows"].append(stamped(row, decl))
    for item in rejected:
        if item.about.get("decl") in out:
            out[item.about["decl"]]["rejected"].append(item.with_lang(lang).to_json())
    return {item_key(d): out[d.id] for d in todo if d.id in out}

