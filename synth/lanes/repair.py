"""The repair lane: declarations broken by AST operators, kept when the compiler rejects the
mutant and accepts the original (synth/mutate/repair.py). Spends nothing."""
from __future__ import annotations

import inspect
from collections import Counter

from oracles.verdict import Candidate, Splice, splice_candidates
from synth.extract.model import crate_name, standalone_source
from synth.tasks.split import heldout_set, repair_task
from synth.tasks.baselines import best_free
from synth.tasks.judge import Judge
from synth.mutate.in_crate import crate_name_of, feature_sets
from synth.mutate.balance import balance, cap_solvable
from synth.mutate.settings import RepairSettings
from synth.mutate.repair import (LANGS, OPERATOR_CAPS, OperatorStats, balance_rejections, eligible_declarations,
                                  make_mutants, mix, repair_rows)
from synth.rows.row import Row
from synth.rows.keys import fingerprint

from .base import Lane, by_declaration
from .estimate import FIRST_RUN_S, plan_row

DEFAULT_RATES = {"candidates_per_item": 12.0, "rows_per_item": 4.0}
# Declarations a part of the lane's work holds at least (whole crates): what a part holds in memory
# (mutants, verdicts, rows) stays bounded on a night of many crates, and every crate is still
# checked in one part, side by side with the others of its part.
PART_DECLARATIONS = 1000


def mark_compiler_solvable(rows: list[Row], oracle, crate_oracle=None, verdicts: list | None = None) -> None:
    """Each row's `compiler_solvable`: whether the compiler's help alone (best_free: every rustc
    suggestion, or the rules on its words; synth/tasks/baselines/) fixes its mutant, judged in place
    as an evaluation judges an answer. None where the row poses no task (a diff answer). `verdicts`:
    each row's mutant as its check found it (the rounds start from it instead of compiling it again)."""
    tasks = [repair_task(r.model_dump()) for r in rows]
    posed = [i for i, t in enumerate(tasks) if t is not None and (t.in_crate is None or crate_oracle is not None)]
    known = [verdicts[i] for i in posed] if verdicts is not None else None  # each mutant's own verdict, where given
    _, solvable = best_free([tasks[i] for i in posed], Judge({"rust": oracle}, crate_oracle), known) if posed else ([], [])
    for i, flag in zip(posed, solvable):
        rows[i].compiler_solvable = flag


class RepairLane(Lane):
    name = "repair"
    Settings = RepairSettings
    poses_tasks = True

    def items(self, ctx, settings, decls):
        return [d for lang in ("rust", "vox") for d in eligible_declarations(decls, lang)]

    def fingerprint(self, ctx, settings, lang, oracle):
        """The operators as registered now, each with its code: one added at run time (not by an
        edit to a module the lane runs) still changes what every item yields."""
        return fingerprint(*[(op.name, inspect.getsource(op.sites)) for op in LANGS[lang][0]])

    def units(self, part):
        """A crate's declarations: checked together in its copy, so the least one can redo alone."""
        crates: dict[str, list] = {}
        for decl in part:
            crates.setdefault(decl.crate_root or crate_name(decl), []).append(decl)
        return crates

    def parts(self, todo):
        """Whole crates (in the order they come) until a part holds `PART_DECLARATIONS`."""
        parts: list[list] = []
        for decls in self.units(todo).values():
            if not parts or len(parts[-1]) >= PART_DECLARATIONS:
                parts.append([])
            parts[-1] += decls
        return parts

    def process(self, ctx, settings, todo, oracle, out):
        lang = todo[0].lang
        # No balancing per item: it is done once in `finish`, over the rows of all items.
        result = repair_rows(todo, oracle, settings, ctx.seed, lang=lang, crate_oracle=_crate_oracle(ctx, settings, lang),
                             fit=ctx.fit, balanced=False, solvable=mark_compiler_solvable)
        if result.funnel:  # per crate, in-crate verification: of the items this run checked (reused ones are not)
            out.extra.setdefault("crates", {}).update(result.funnel)
        return by_declaration(todo, result.rows, result.rejected, lang=lang)

    def finish(self, ctx, settings, out, items):
        kept, dropped = balance(out.rows, settings.max_share, ctx.seed, OPERATOR_CAPS)
        # the cap shapes what is trained on; a held-out crate's rows become the measure, left as they are
        held = heldout_set(ctx.tasks, kept, ctx.seed)
        trained, capped = cap_solvable([r for r in kept if r.crate not in held], settings.max_compiler_solvable, ctx.seed)
        kept = trained + [r for r in kept if r.crate in held]
        out.rows = sorted(kept, key=lambda r: (r.provenance.source_path, r.provenance.decl_hash, r.operator))
        out.rejected += balance_rejections(dropped, capped, settings)
        out.extra["codes"] = dict(Counter(c for r in out.rows for c in r.diagnostic_codes).most_common())
        out.extra["mix"] = mix(out.rows, capped)
        crate = ctx.crate_oracle
        if crate is not None and getattr(crate, "stats", None) is not None:  # what each crate's checks cost
            stats = crate.stats  # [mutants checked, seconds of all checks, of them the crate as it is]
            out.extra["crates_compiled"] = {name: [n, round(stats.crate_seconds.get(name, 0.0), 3),
                                                   round(stats.crate_setup_s.get(name, 0.0), 3)]
                                            for name, n in sorted(stats.crate_candidates.items())}

    def plan(self, ctx, settings, pending, estimate):
        measured = estimate.measured.get("repair")
        basis, rates = "default", dict(DEFAULT_RATES)
        if measured and measured.get("processed"):
            basis = "measured"
            rates = {"candidates_per_item": measured.get("candidates_compiled", 0) / measured["processed"] or
                     DEFAULT_RATES["candidates_per_item"], "rows_per_item": measured["rows"] / max(1, measured["items"])}
        mutants = planned_mutants(pending, ctx, settings)
        seconds = compile_seconds(mutants, measured or {}, estimate.compile_rate)
        candidates = sum(mutants.values())
        return plan_row("repair", "-", items=len(pending), rows=rates["rows_per_item"] * len(pending),
                        compile_candidates=candidates, compile_s_per=seconds / max(1, candidates), basis=basis)


def planned_mutants(decls, ctx, settings) -> Counter:
    """The mutants a run would compile for `decls`, by crate folder: made as the run makes them (no
    compile: operators are plain code), less those whose verdict the cache holds alone or in the crate."""
    counts: Counter = Counter()
    for lang in sorted({d.lang for d in decls}):
        operators, sites_of, apply_edit = LANGS[lang]
        stats = {op.name: OperatorStats() for op in operators}
        mine = [d for d in decls if d.lang == lang]
        oracle, crate = ctx.oracles.get(lang), _crate_oracle(ctx, settings, lang)
        mutants = make_mutants(mine, operators, ctx.seed, stats, sites_of, apply_edit)
        spliced = [m for m in mutants if crate is not None and m.decl.crate_root]
        # a mutant is checked in the copy with its declaration's feature set: cached under any of them counts
        sets = {root: feature_sets(root) for root in sorted({m.decl.crate_root for m in spliced})}
        variants = [(id(m), Splice(m.decl.crate_root, m.decl.crate_path, m.decl.start_byte, m.decl.end_byte, m.broken,
                                   features)) for m in spliced for features in sets[m.decl.crate_root]]
        in_crate = {key for (key, _), candidate in zip(variants, splice_candidates([s for _, s in variants]))
                    if _cached(crate, candidate)}
        for m in mutants:
            if not (id(m) in in_crate or _cached(oracle, Candidate.of(standalone_source(m.decl, m.broken)))):
                counts[crate_name_of(m.decl.crate_root)] += 1
    return counts


def _cached(oracle, candidate) -> bool:
    cache = getattr(oracle, "cache", None)
    return cache is not None and cache.lookup(oracle, candidate) is not None


def compile_seconds(mutants: Counter, measured: dict, default_rate: float) -> float:
    """The lane's seconds for these mutants: per crate, its copy's set-up (dependencies built, the
    crate checked as it is) and its measured seconds per checked mutant (the mean of the measured
    crates for another), times the lane's seconds per second of checks in the last run
    (standalone checks, extraction, the rest of the lane); a run that checked nothing in a crate,
    the global rate; before any run, the first run's reference seconds a crate and a mutant."""
    if not measured.get("seconds"):
        return (FIRST_RUN_S["repair_crate"] * sum(1 for n in mutants.values() if n) +
                FIRST_RUN_S["repair_mutant"] * sum(mutants.values()))
    figures = {name: f for name, f in (measured.get("crates_compiled") or {}).items() if len(f) == 3 and f[0]}
    checked_s = sum(f[1] for f in figures.values())
    if not figures or not checked_s:
        return default_rate * sum(mutants.values())
    mean = sum(f[1] - f[2] for f in figures.values()) / sum(f[0] for f in figures.values())
    mean_setup = sum(f[2] for f in figures.values()) / len(figures)
    need = sum((figures[name][2] if name in figures else mean_setup) +
               n * ((figures[name][1] - figures[name][2]) / figures[name][0] if name in figures else mean)
               for name, n in mutants.items() if n)
    return measured["seconds"] / checked_s * need


def _crate_oracle(ctx, settings: RepairSettings, lang: str):
    return ctx.crate_oracle if lang == "rust" and settings.in_crate != "never" else None
