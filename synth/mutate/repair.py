"""Repair rows: declarations broken by an operator, kept only when the compiler rejects the
broken version and accepts the original, each in its standalone context file.

The prompt carries the broken declaration, the compiler's diagnostics (positions relative to the
declaration) and the context; the answer is the original declaration, or a unified diff."""
from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field

from oracles.verdict import EXIT_ONLY, Candidate, Verdict
from synth.extract.package import package_of
from synth.extract.model import Declaration, block_text, cfg_gated, crate_name, crate_spot, standalone_source
from synth.settings.fit import TOO_LONG, Fit
from synth.rows.rejection import Rejection
from synth.prompting.templates import DECLARATION_INSTRUCTION, language_and_fence, system_prompt, template, template_hash
from synth.rows.row import Provenance, Row, Verification, make_row

from synth.mutate.settings import RepairSettings
from synth.mutate.operators.rust import RUST_OPERATORS, Operator, apply, rust_sites
from synth.tasks.diagnostics import render_diagnostics
from synth.mutate.balance import balance, cap_solvable, seeded_rng
from synth.mutate.in_crate import InCrate, crate_jobs, crate_originals, crate_recipe, funnel
from synth.mutate.operators.vox import RETIRED_OPERATORS, VOX_OPERATORS, vox_apply, vox_sites

ELIGIBLE_KINDS = {"rust": {"fn", "method", "impl"},
                  "vox": {"fn", "query", "mutation", "component", "server", "tool", "table", "workflow", "activity"}}
LANGS = {"rust": (RUST_OPERATORS, rust_sites, apply), "vox": (VOX_OPERATORS, vox_sites, vox_apply)}


# Tighter caps for some operators: retired-syntax mutants were over-represented in the audit.
OPERATOR_CAPS = {op: 0.1 for op in RETIRED_OPERATORS}


@dataclass
class OperatorStats:
    attempts: int = 0  # declarations the operator was tried on
    applicable: int = 0  # ... where it found a site
    killed: int = 0  # mutants the compiler rejected
    equivalent: int = 0  # mutants that still compile (dropped)
    unexplained: int = 0  # rejected with no diagnostic but an exit status (e.g. in macro-written code): dropped
    duplicate: int = 0  # the same broken text as another operator's mutant
    kept: int = 0  # rows after balancing
    balanced_out: int = 0  # killed mutants whose rows balancing dropped (over the share cap)


@dataclass
class Mutant:
    decl: Declaration
    operator: str
    broken: str
    verdict: Verdict | None = None


@dataclass
class RepairResult:
    rows: list[Row] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    stats: dict[str, OperatorStats] = field(default_factory=dict)
    codes: Counter = field(default_factory=Counter)
    funnel: dict = field(default_factory=dict)  # per crate (in-crate verification on)
    checked_in_crate: list = field(default_factory=list)  # (Mutant, its Job) checked in its crate

    def table(self) -> list[dict]:
        out = []
        for name, s in self.stats.items():
            applicable = max(1, s.applicable)
            out.append({"operator": name, "attempts": s.attempts, "applicable": s.applicable, "killed": s.killed,
                        "equivalent": s.equivalent, "unexplained": s.unexplained, "duplicate": s.duplicate,
                        "kept": s.kept, "balanced_out": s.balanced_out,
                        "kill_rate": round(s.killed / applicable, 3) if s.applicable else None})
        return out


def make_mutants(decls: list[Declaration], operators: list[Operator], seed: int,
                 stats: dict[str, OperatorStats], sites_of=rust_sites, apply_edit=apply) -> list[Mutant]:
    mutants = []
    for decl in decls:
        base = block_text(decl.clean_text)  # as the prompt shows it: positions in diagnostics agree
        seen = {base}
        for op in operators:
            st = stats[op.name]
            st.attempts += 1
            sites = sites_of(base, op)
            if not sites:
                continue
            st.applicable += 1
            edit = seeded_rng(seed, decl.hash, op.name).choice(sites)
            broken = apply_edit(base, edit)
            if broken in seen:
                st.duplicate += 1
                continue
            seen.add(broken)
            mutants.append(Mutant(decl, op.name, broken))
    return mutants


def unified_diff(broken: str, fixed: str, name: str) -> str:
    b = broken if broken.endswith("\n") else broken + "\n"
    f = fixed if fixed.endswith("\n") else fixed + "\n"
    return "".join(difflib.unified_diff(b.splitlines(keepends=True), f.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def build_rows(mutants: list[Mutant], originals: dict[str, Verdict], settings: RepairSettings, seed: int,
               recipes: dict[str, dict] | None = None) -> list[Row]:
    """`recipes`: for declarations verified in their crate, how to check them there again."""
    recipes = recipes or {}
    rows = []
    tmpl_hash = template_hash("repair")
    for m in mutants:
        decl = m.decl
        fence = language_and_fence(decl.lang)[1]
        recipe = recipes.get(decl.id)
        broken, fixed = m.broken, block_text(decl.clean_text)
        shown = render_diagnostics(m.verdict, broken, 0 if recipe else answer_offset(decl))
        prompt = repair_prompt(decl, broken, shown, settings.diff)
        response = unified_diff(broken, fixed, f"{decl.name or 'decl'}.{fence}") if settings.diff else fixed
        codes = sorted({d.code or "syntax" for d in m.verdict.errors})
        row = make_row(
            lang=decl.lang, lane=f"{decl.lang}_repair", task="repair", prompt=prompt, response=response,
            verdict=originals[decl.id], system=system_prompt(),
            provenance=Provenance(**package_of(decl).fields(), source_path=decl.path, decl_hash=decl.hash, decl_id=decl.id,
                                  stage="repair", operator=m.operator,
                                  prompt_template_hash=tmpl_hash, seed=seed),
            checked_source=standalone_source(decl, fixed), checked_broken_source=standalone_source(decl, broken),
            crate=crate_name(decl), name=decl.name, kind=decl.kind, signature=decl.signature,
            broken=broken, fixed=fixed, context=decl.context, wrapper_head=decl.wrapper_head,
            wrapper_tail=decl.wrapper_tail, operator=m.operator, diagnostic_codes=codes,
            primary_code=(m.verdict.errors[0].code or "syntax"), answer_format="diff" if settings.diff else "declaration",
            broken_verification=Verification.of(m.verdict).model_dump(),
            compiler_solvable=None,  # worked out once the rows are made (mark_compiler_solvable)
        )
        if recipe:
            row.verification = row.verification.model_copy(update={"scope": "crate", "crate": recipe})
            row.broken_verification.update(scope="crate", crate=recipe)
        elif decl.crate_root and decl.crate_path:  # checked standalone; the crate's tests run it in place
            row.crate_spot = crate_spot(decl)
        rows.append(row)
    return rows


def mix(rows: list[Row], capped: list[Row] = ()) -> dict:
    """The rows by primary error code, crate and operator, each counted whole and as those the
    compiler's help alone fixes; and how many of those the cap left out."""
    def split(group: list[Row]) -> dict:
        return {"rows": len(group), "compiler_solvable": sum(bool(r.compiler_solvable) for r in group)}

    def by(key) -> dict:
        return {k: split([r for r in rows if key(r) == k]) for k in sorted({key(r) for r in rows})}
    return {**split(rows), "capped_solvable": len(capped), "by_code": by(lambda r: r.primary_code),
            "by_crate": by(lambda r: r.crate or ""), "by_operator": by(lambda r: r.operator)}


SOLVABLE_CAP = "balance: compiler-solvable cap"  # the kind of a row the cap on compiler-solvable rows dropped
# the kinds of an original no mutant is made of, and of a mutant that still compiles (the ablations read them back)
ORIGINAL_FAILS, EQUIVALENT = "original does not compile", "equivalent mutant"


def balance_rejections(dropped: list[Row], capped: list[Row], settings: RepairSettings) -> list[Rejection]:
    """Why balancing dropped each row: its operator or code over its share, or the compiler's help
    fixes it and such rows are over their cap."""
    share = f"balance: over {settings.max_share:.0%} share"
    solvable = f"balance: over {settings.max_compiler_solvable:.0%} of rows the compiler's help fixes"
    return [Rejection(kind, why, {"decl": r.provenance.decl_hash, "operator": r.operator, "row_id": r.id})
            for rows, kind, why in ((dropped, "balance: share", share), (capped, SOLVABLE_CAP, solvable)) for r in rows]


def answer_offset(decl: Declaration) -> int:
    """Lines of the standalone file before the declaration's first line."""
    return (decl.context + decl.wrapper_head).count("\n")


def repair_prompt(decl: Declaration, broken: str, diagnostics: str, diff: bool) -> str:
    """The user turn of a repair row: the context, the impl a method sits in, the broken
    declaration, the compiler's errors and what to answer with."""
    language, fence = language_and_fence(decl.lang)
    instruction = ("Reply with a unified diff (---/+++ headers, @@ hunks) that fixes the declaration."
                   if diff else DECLARATION_INSTRUCTION)
    owner = f"It is a method inside:\n```{fence}\n{decl.owner}\n```\n\n" if decl.owner else ""
    return template("repair").format(language=language, fence=fence, context=decl.context.rstrip() or "(none)",
                                     owner=owner, broken=broken.rstrip(), diagnostics=diagnostics,
                                     instruction=instruction).strip()


def _check(oracle, sources: list[str], expect_pass: bool) -> list[Verdict]:
    candidates = [Candidate.of(s) for s in sources]
    if oracle.id == "rustc":  # the batched oracle takes the lane's expectation (cost only)
        return oracle.check(candidates, expect_pass=[expect_pass] * len(candidates))
    return oracle.check(candidates)


def eligible_declarations(decls: list[Declaration], lang: str) -> list[Declaration]:
    """The declarations the repair lane mutates."""
    return [d for d in decls if d.lang == lang and d.kind in ELIGIBLE_KINDS[lang] and not d.near_parse_error]


def repair_rows(decls: list[Declaration], oracle, settings: RepairSettings | None = None, seed: int = 0,
                lang: str = "rust", operators: list[Operator] | None = None, crate_oracle=None,
                fit: Fit | None = None, balanced: bool = True, solvable=None) -> RepairResult:
    """Repair rows for the `lang` declarations (with their context), gated by `oracle`
    (RustOracle for Rust, VoxOracle for Vox); `crate_oracle` (CargoCrateOracle) checks Rust
    declarations in their crate where `settings.in_crate` says so. With `fit` ([tokens]), a
    declaration whose rows cannot fit (its answer, or its prompt without the broken code and the
    errors) is left out before any compile, and a row whose prompt does not fit is rejected.
    `balanced`: no operator or code over `settings.max_share` of these rows (a caller that
    gathers rows of many calls balances them all at once instead). `solvable(rows, oracle,
    crate_oracle)` marks each Rust row's `compiler_solvable` (synth/lanes/repair.py's
    mark_compiler_solvable: the compiler's help judged on its mutant), which the cap reads."""
    settings = settings or RepairSettings()
    default_ops, sites_of, apply_edit = LANGS[lang]
    operators = operators or default_ops
    result = RepairResult(stats={op.name: OperatorStats() for op in operators})
    eligible = eligible_declarations(decls, lang)
    if fit is not None and fit.active:
        eligible, too_long = _fitting(eligible, fit, settings.diff)
        result.rejected += too_long
    use_crate = crate_oracle is not None and lang == "rust" and settings.in_crate != "never"
    # a declaration whose context was cut at its size budget goes straight to its crate: alone it
    # mostly fails for want of what was cut, at the cost of a check
    alone = [d for d in eligible if not (use_crate and d.crate_root and (settings.in_crate == "always" or d.context_truncated))]
    # one with its own #[cfg(...)] may pass alone unseen: only its crate's probe check verifies it
    gated = {d.id for d in alone if cfg_gated(d)}
    alone = [d for d in alone if d.id not in gated]
    original_verdicts = _check(oracle, [standalone_source(d) for d in alone], True)
    originals: dict[str, Verdict] = {}
    scopes: dict[str, str] = {}
    failed_alone = {}
    for decl, verdict in zip(alone, original_verdicts):
        if verdict.passed:
            originals[decl.id], scopes[decl.id] = verdict, "standalone"
        else:
            failed_alone[decl.id] = verdict
    in_crate_verified = crate_originals([d for d in eligible if d.id not in originals], crate_oracle) \
        if use_crate else InCrate()
    for decl_id, verdict in in_crate_verified.verified.items():
        originals[decl_id], scopes[decl_id] = verdict, "crate"
    recipes = {d.id: crate_recipe(d, crate_oracle, in_crate_verified.features[d.id])
               for d in eligible if scopes.get(d.id) == "crate"}
    for decl in eligible:
        if decl.id not in originals:
            verdict = failed_alone.get(decl.id)
            kind, reason = (("original not verified (own #[cfg])", "its own #[cfg(...)] may hide it from a check alone")
                            if decl.id in gated else (ORIGINAL_FAILS, "original does not compile standalone"))
            if use_crate:
                reason += f", nor in its crate: {in_crate_verified.why_not.get(decl.id, '')}"
            result.rejected.append(Rejection(kind, reason, {
                "decl": decl.id, "name": decl.name,
                "diagnostics": [d.render() for d in verdict.errors] if verdict else []}))
    mutants = make_mutants([d for d in eligible if d.id in originals], operators, seed, result.stats,
                           sites_of, apply_edit)
    in_crate = [m for m in mutants if m.decl.id in recipes]
    standalone = [m for m in mutants if m.decl.id not in recipes]
    by_mutant = dict(zip(map(id, standalone), _check(oracle, [standalone_source(m.decl, m.broken) for m in standalone],
                                                     False)))
    if in_crate:
        jobs = crate_jobs(in_crate, crate_oracle, in_crate_verified.features)
        by_mutant.update(zip(map(id, in_crate), crate_oracle.check(jobs)))
        result.checked_in_crate = list(zip(in_crate, jobs))
    verdicts = [by_mutant[id(m)] for m in mutants]
    killed = []
    for m, verdict in zip(mutants, verdicts):
        m.verdict = verdict
        st = result.stats[m.operator]
        if verdict.passed or not verdict.errors:
            st.equivalent += 1
            result.rejected.append(Rejection(EQUIVALENT, "equivalent mutant (still compiles)", {
                "decl": m.decl.id, "name": m.decl.name, "operator": m.operator, "broken": m.broken}))
        elif all(d.code in EXIT_ONLY for d in verdict.errors):  # nothing to learn from: the compiler named no error
            st.unexplained += 1
            result.rejected.append(Rejection(
                "no diagnostic", f"rejected without a diagnostic ({verdict.errors[0].message.split(':')[0]})",
                {"decl": m.decl.id, "name": m.decl.name, "operator": m.operator, "broken": m.broken}))
        else:
            st.killed += 1
            killed.append(m)
    rows = build_rows(killed, originals, settings, seed, recipes)
    broken_verdicts = {row.id: m.verdict for row, m in zip(rows, killed)}
    if fit is not None and fit.active:
        rows, too_long = _fitting_rows(rows, fit)
        result.rejected += too_long
    if solvable is not None and lang == "rust":  # the mutants' verdicts are at hand: not compiled again
        solvable(rows, oracle, crate_oracle if use_crate else None, [broken_verdicts[r.id] for r in rows])
    kept, dropped = balance(rows, settings.max_share, seed, OPERATOR_CAPS) if balanced else (rows, [])
    kept, capped = cap_solvable(kept, settings.max_compiler_solvable, seed) if balanced else (kept, [])
    for row in dropped + capped:
        result.stats[row.operator].balanced_out += 1
    result.rejected += balance_rejections(dropped, capped, settings)
    for row in kept:
        result.stats[row.operator].kept += 1
        result.codes.update(row.diagnostic_codes)
    result.rows = sorted(kept, key=lambda r: (r.provenance.source_path, r.provenance.decl_hash,
                                              r.provenance.decl_id or "", r.operator))
    result.funnel = funnel(eligible, scopes, result.rejected, mutants, result.rows, in_crate_verified) if use_crate else {}
    return result


def _fitting(decls: list[Declaration], fit: Fit, diff: bool) -> tuple[list[Declaration], list[Rejection]]:
    """The declarations whose rows may fit the token limits, and the others rejected."""
    kept, rejected = [], []
    for decl in decls:
        floor = repair_prompt(decl, "", "", diff)  # every row's prompt holds at least this
        over = fit.over(floor, None if diff else block_text(decl.clean_text))
        if over:
            rejected.append(Rejection(TOO_LONG, over, {"decl": decl.id, "name": decl.name}))
        else:
            kept.append(decl)
    return kept, rejected


def _fitting_rows(rows: list[Row], fit: Fit) -> tuple[list[Row], list[Rejection]]:
    kept, rejected = [], []
    for row in rows:
        over = fit.over(row.prompt, row.response)
        if over:
            rejected.append(Rejection(TOO_LONG, over, {"decl": row.provenance.decl_id, "operator": row.operator,
                                                       "row_id": row.id}))
        else:
            kept.append(row)
    return kept, rejected
