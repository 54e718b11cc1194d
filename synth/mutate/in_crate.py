"""Repair rows verified in the declaration's real crate, where its standalone file cannot be.

The original is verified once per crate: the crate copy compiles as a whole, so every declaration
in it compiles in context. Mutants are spliced over the declaration's byte span and checked in
batches (oracles/crate_batch.py). A row records how to check it again: the crate's name, version
and edition, its default features, and the replaced file and byte span.
"""
from __future__ import annotations

from collections import Counter

from oracles.verdict import Splice, Verdict
from synth.extract.model import Declaration


def crate_originals(decls: list[Declaration], oracle) -> tuple[dict[str, Verdict], dict[str, str]]:
    """(verdict by decl id for those verified in their crate, why not for the others)."""
    verified, why_not = {}, {}
    for decl in decls:
        if not decl.crate_root or not decl.crate_path:
            why_not[decl.id] = "not in a crate (no Cargo.toml above it)"
            continue
        verdict = oracle.original(decl.crate_root)
        if verdict.passed:
            verified[decl.id] = verdict
        else:
            first = verdict.errors[0].render() if verdict.errors else "no diagnostic"
            why_not[decl.id] = f"crate does not compile: {first.splitlines()[0][:200]}"
    return verified, why_not


def crate_jobs(mutants, oracle) -> list:
    """What the crate oracle (oracles/crate_batch.py) checks for each mutant (`.decl`, `.broken`, `.operator`)."""
    return [oracle.job(Splice(m.decl.crate_root, m.decl.crate_path, m.decl.start_byte, m.decl.end_byte, m.broken),
                       m.decl.name, m.decl.text, m.operator, _in_trait_impl(m.decl))
            for m in mutants]


def _in_trait_impl(decl: Declaration) -> bool:
    """A trait impl, or a method of one (a trait's own default methods have no self type)."""
    return bool(decl.trait_name and (decl.self_type or decl.kind == "impl"))


def crate_recipe(decl: Declaration, oracle) -> dict:
    """What a row records so that anyone can check it again in the same crate."""
    facts = oracle.facts(decl.crate_root)
    return {"name": facts.get("name"), "version": facts.get("version"), "edition": facts.get("edition"),
            "features": facts.get("features", []), "crate_hash": facts.get("crate_hash"),
            "path": decl.crate_path, "start_byte": decl.start_byte, "end_byte": decl.end_byte,
            "check": "cargo check --offline --lib", "rustflags": oracle.flags["rustflags"],
            "root": decl.crate_root, "decl_name": decl.name, "trait_impl": _in_trait_impl(decl)}


def funnel(eligible: list[Declaration], scopes: dict[str, str], rejected: list[dict], mutants, rows) -> dict:
    """Per crate: eligible -> verified standalone -> verified in crate -> mutants -> rows, and why
    each declaration was left out."""
    out: dict[str, dict] = {}
    crate_of = {d.id: (d.crate_root.rstrip("/").rsplit("/", 1)[-1] if d.crate_root else "(no crate)") for d in eligible}
    for d in eligible:
        f = out.setdefault(crate_of[d.id], {"eligible": 0, "verified_standalone": 0, "verified_crate": 0,
                                            "mutants": 0, "killed": 0, "rows": 0, "left_out": Counter()})
        f["eligible"] += 1
        if scopes.get(d.id) == "standalone":
            f["verified_standalone"] += 1
        elif scopes.get(d.id) == "crate":
            f["verified_crate"] += 1
    killed_by_decl: Counter = Counter()
    for m in mutants:
        f = out[crate_of[m.decl.id]]
        f["mutants"] += 1
        killed = bool(m.verdict and not m.verdict.passed and m.verdict.errors)
        f["killed"] += killed
        killed_by_decl[m.decl.id] += killed
    for decl_id in {m.decl.id for m in mutants} - {d for d, n in killed_by_decl.items() if n}:
        # Every mutant still compiles: likely code the default features configure out.
        out[crate_of[decl_id]].setdefault("verified_but_no_mutant_killed", 0)
        out[crate_of[decl_id]]["verified_but_no_mutant_killed"] += 1
    decl_by_hash = {(d.path, d.hash): d.id for d in eligible}
    for row in rows:
        out[crate_of[decl_by_hash[(row.provenance.source_path, row.provenance.decl_hash)]]]["rows"] += 1
    ids = {d.id for d in eligible}
    for r in rejected:
        if r.get("decl") in ids and "operator" not in r:
            out[crate_of[r["decl"]]]["left_out"][r["reason"].split(":")[0]] += 1
    for f in out.values():
        f["left_out"] = dict(f["left_out"].most_common())
    return dict(sorted(out.items()))
