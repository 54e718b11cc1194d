"""Repair rows verified in the declaration's real crate, where its standalone file cannot be.

The original is verified once per crate: the crate copy compiles as a whole, so every declaration
the compiler sees in it compiles in context; a probe check (oracles/cargo/probe.py) tells which it
sees under the default features, else under features off by default (those left are configured
out: `#[cfg(test)]`, another target, a feature whose dependencies are not at hand). Mutants are
spliced over the declaration's byte span and checked in batches (oracles/cargo/crate.py). A row records how to check it again: the crate's name, version
and edition, the features it was verified with, and the replaced file and byte span.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from oracles.cargo.manifest import ManifestError, offline_features
from oracles.cargo.probe import body_start
from oracles.verdict import Splice, Verdict
from synth.extract.model import Declaration, folder_name
from synth.rows.rejection import Rejection


MAX_FEATURE_SETS = 16  # per crate, besides the default features and all of them: each costs a build of its dependencies


@dataclass
class InCrate:
    """Declarations verified in their crate: only those the compiler saw (a probe check says
    which), each under the first feature set that compiles it."""

    verified: dict[str, Verdict] = field(default_factory=dict)  # decl id -> the crate's passing verdict
    why_not: dict[str, str] = field(default_factory=dict)  # decl id -> why it is not verified
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)  # decl id -> features on besides the default
    feature_sets: dict[str, list[dict]] = field(default_factory=dict)  # crate -> the sets checked, what each compiled


def crate_originals(decls: list[Declaration], oracle) -> InCrate:
    """Verify each declaration in its crate: the crate passes under the default features (or
    under features off by default whose dependencies are at hand) and a probe check shows the
    compiler saw the declaration there. What no feature set compiles is configured out. Crates
    are verified side by side (the oracle's workers), their findings merged in crate order."""
    out = InCrate()
    by_crate: dict[str, list[Declaration]] = {}
    for decl in decls:
        if not decl.crate_root or not decl.crate_path:
            out.why_not[decl.id] = "not in a crate (no Cargo.toml above it)"
        else:
            by_crate.setdefault(decl.crate_root, []).append(decl)
    for part in oracle.each_crate(lambda item: _crate_verified(*item, oracle), list(by_crate.items()),
                                  cost=lambda item: len(item[1])):
        out.verified.update(part.verified)
        out.why_not.update(part.why_not)
        out.features.update(part.features)
        for name, sets in part.feature_sets.items():
            out.feature_sets.setdefault(name, []).extend(sets)
    return out


def _crate_verified(root: str, group: list[Declaration], oracle) -> InCrate:
    """crate_originals for one crate."""
    out = InCrate()
    default = oracle.original(root)
    if not default.passed:
        first = default.errors[0].render() if default.errors else "no diagnostic"
        out.why_not.update({d.id: f"crate does not compile: {first.splitlines()[0][:200]}" for d in group})
        return out
    points = {}
    for d in group:
        at = body_start(d.text, d.signature, d.body if d.kind != "impl" else "")
        if at is None:
            out.why_not[d.id] = "configured out: no body a probe could be planted in"
        else:
            points[d.id] = (d.crate_path, d.start_byte + at)
    checked = out.feature_sets.setdefault(crate_name_of(root), [])
    sets = [(), *_extra_sets(root)[:1]]
    for features in sets:
        todo = [i for i in points if i not in out.verified]
        if not todo:
            break
        seen = oracle.compiled(root, features, [points[i] for i in todo])
        verdict = default if not features else oracle.original(root, features) if seen else None
        passed = verdict.passed if verdict else None  # None: not checked (the probe saw nothing new)
        checked.append({"features": list(features), "compiled": len(seen) if passed else 0, "passed": passed})
        if passed:
            for k in seen:
                out.verified[todo[k]], out.features[todo[k]] = verdict, features
        elif len(sets) == 2 and features == sets[1]:  # all together fail (or show nothing): each alone
            sets += _extra_sets(root)[1:]
    tried = ", ".join("+" + ",".join(s["features"]) if s["features"] else "default" for s in checked)
    out.why_not.update({i: f"configured out: compiled under no feature set checked ({tried})"
                        for i in points if i not in out.verified})
    return out


def feature_sets(root: str) -> list[tuple[str, ...]]:
    """Every feature set a run may check the crate's mutants under: the default ones, then those
    `_extra_sets` adds (a declaration is verified, and its mutants checked, in one of them)."""
    return [(), *_extra_sets(root)]


def _extra_sets(root: str) -> list[tuple[str, ...]]:
    """Feature sets to check besides the default: all features off by default whose dependencies
    are at hand together, then each alone (up to MAX_FEATURE_SETS)."""
    try:
        extras = offline_features(Path(root))
    except ManifestError:
        return []
    alone = [(f,) for f in extras[:MAX_FEATURE_SETS]] if len(extras) > 1 else []
    return [tuple(extras), *alone] if extras else []


def crate_name_of(root: str | None) -> str:
    return folder_name(root) if root else "(no crate)"


def crate_jobs(mutants, oracle, features: dict[str, tuple[str, ...]]) -> list:
    """What the crate oracle (oracles/cargo/crate.py) checks for each mutant (`.decl`, `.broken`,
    `.operator`), in the copy with the features its declaration was verified under."""
    return [oracle.job(Splice(m.decl.crate_root, m.decl.crate_path, m.decl.start_byte, m.decl.end_byte, m.broken,
                              features.get(m.decl.id, ())),
                       m.decl.name, m.decl.text, m.operator, _in_trait_impl(m.decl))
            for m in mutants]


def _in_trait_impl(decl: Declaration) -> bool:
    """A trait impl, or a method of one (a trait's own default methods have no self type)."""
    return bool(decl.trait_name and (decl.self_type or decl.kind == "impl"))


def crate_recipe(decl: Declaration, oracle, features: tuple[str, ...] = ()) -> dict:
    """What a row records so that anyone can check it again in the same crate: `features` are
    those on besides the default ones (`features` in the recipe: all of them)."""
    facts = oracle.facts(decl.crate_root, features)
    return {"name": facts.get("name"), "version": facts.get("version"), "edition": facts.get("edition"),
            "features": facts.get("features", []), "extra_features": list(features), "crate_hash": facts.get("crate_hash"),
            "path": decl.crate_path, "start_byte": decl.start_byte, "end_byte": decl.end_byte,
            "check": "cargo check --offline --lib", "rustflags": oracle.flags["rustflags"],
            "root": decl.crate_root, "decl_name": decl.name, "trait_impl": _in_trait_impl(decl)}


def funnel(eligible: list[Declaration], scopes: dict[str, str], rejected: list[Rejection], mutants, rows,
           in_crate: InCrate | None = None) -> dict:
    """Per crate: eligible -> verified standalone -> verified in crate -> mutants -> rows, why
    each declaration was left out, the feature sets checked and the declarations configured out."""
    out: dict[str, dict] = {}
    in_crate = in_crate or InCrate()
    crate_of = {d.id: crate_name_of(d.crate_root) for d in eligible}
    for d in eligible:
        f = out.setdefault(crate_of[d.id], {"eligible": 0, "verified_standalone": 0, "verified_crate": 0,
                                            "configured_out": 0, "mutants": 0, "killed": 0, "rows": 0,
                                            "left_out": Counter(),
                                            "feature_sets": in_crate.feature_sets.get(crate_of[d.id], [])})
        f["eligible"] += 1
        f["configured_out"] += in_crate.why_not.get(d.id, "").startswith("configured out") and d.id not in scopes
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
        # Every mutant of a declaration the compiler saw still compiles (each equivalent).
        out[crate_of[decl_id]].setdefault("verified_but_no_mutant_killed", 0)
        out[crate_of[decl_id]]["verified_but_no_mutant_killed"] += 1
    decl_by_hash = {(d.path, d.hash): d.id for d in eligible}
    for row in rows:
        out[crate_of[decl_by_hash[(row.provenance.source_path, row.provenance.decl_hash)]]]["rows"] += 1
    ids = {d.id for d in eligible}
    for r in rejected:
        if r.about.get("decl") in ids and "operator" not in r.about:
            out[crate_of[r.about["decl"]]]["left_out"][r.kind] += 1
    for f in out.values():
        f["left_out"] = dict(f["left_out"].most_common())
    return dict(sorted(out.items()))
