"""The repair lane: declarations broken by AST operators, kept when the compiler rejects the
mutant and accepts the original (synth/mutate/repair.py). Spends nothing."""
from __future__ import annotations

import inspect
from collections import Counter

from typing import Literal

from pydantic import Field

from synth.mutate import diagnostics
from synth.mutate.repair import (LANGS, RepairConfig, balance, build_rows, eligible_declarations, repair_prompt,
                                  repair_rows)
from synth.store import fingerprint
from synth.prompts import template_hash

from .base import Lane, StageSettings, by_declaration, toolchain_of
from .estimate import plan_row

DEFAULT_RATES = {"candidates_per_item": 12.0, "rows_per_item": 4.0}


class RepairSettings(StageSettings):
    enabled: bool = True
    max_share: float = Field(0.25, gt=0, le=1)  # no operator and no error code above this share of the rows
    diff: bool = False  # answer with a unified diff instead of the fixed declaration
    # Rust: verify in the real crate where the standalone file fails (or always, or never)
    in_crate: Literal["fallback", "always", "never"] = "fallback"


def row_format() -> str:
    """The code that writes a row (its fields, its prompt, how errors are shown): a change to it
    changes the lane's fingerprint, so stored rows are written again."""
    return fingerprint(inspect.getsource(build_rows), inspect.getsource(repair_prompt), inspect.getsource(diagnostics))


def operator_set(lang: str) -> list:
    """The operators and their code: a new or edited operator changes the lane's fingerprint, so
    stored results are not reused for it."""
    return [(op.name, fingerprint(inspect.getsource(op.sites))) for op in LANGS[lang][0]]


class RepairLane(Lane):
    name = "repair"
    Settings = RepairSettings
    poses_tasks = True

    def items(self, ctx, settings, decls):
        return [d for lang in ("rust", "vox") for d in eligible_declarations(decls, lang)]

    def fingerprint(self, ctx, settings, lang, oracle):
        crate = _crate_oracle(ctx, settings, lang)
        return fingerprint("repair", lang, ctx.seed, settings.diff, toolchain_of(oracle), oracle.flags,
                           template_hash("repair"), operator_set(lang), row_format(),
                           *([settings.in_crate, crate.toolchain, crate.flags] if crate else []), *ctx.fit.fingerprint)

    def process(self, ctx, settings, todo, oracle, out):
        lang = todo[0].lang
        # No balancing per item: it is done once in `finish`, over the rows of all items.
        config = RepairConfig(seed=ctx.seed, max_share=1.0, diff=settings.diff, operator_caps={},
                              in_crate=settings.in_crate)
        result = repair_rows(todo, oracle, config, lang=lang, crate_oracle=_crate_oracle(ctx, settings, lang),
                             fit=ctx.fit)
        return by_declaration(todo, result.rows, result.rejected, lang=lang)

    def finish(self, ctx, settings, out, items):
        kept, dropped = balance(out.rows, settings.max_share, ctx.seed, RepairConfig().operator_caps)
        out.rows = sorted(kept, key=lambda r: (r.provenance.source_path, r.provenance.decl_hash, r.operator))
        out.rejected += [{"decl": r.provenance.decl_hash, "operator": r.operator, "row_id": r.id,
                          "reason": f"balance: over {settings.max_share:.0%} share"} for r in dropped]
        out.extra["codes"] = dict(Counter(c for r in out.rows for c in r.diagnostic_codes).most_common())

    def plan(self, ctx, settings, pending, estimate):
        measured = estimate.measured.get("repair")
        basis, rates = "default", dict(DEFAULT_RATES)
        if measured and measured.get("processed"):
            basis = "measured"
            rates = {"candidates_per_item": measured.get("candidates_compiled", 0) / measured["processed"] or
                     DEFAULT_RATES["candidates_per_item"], "rows_per_item": measured["rows"] / max(1, measured["items"])}
        return plan_row("repair", "-", items=len(pending), rows=rates["rows_per_item"] * len(pending),
                        compile_candidates=rates["candidates_per_item"] * len(pending),
                        compile_s_per=estimate.compile_rate, basis=basis)


def _crate_oracle(ctx, settings: RepairSettings, lang: str):
    return ctx.crate_oracle if lang == "rust" and settings.in_crate != "never" else None
