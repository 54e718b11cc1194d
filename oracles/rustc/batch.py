"""How the batched Rust oracle groups candidates (no two that could see each other's names in one
batch; parts spread over workers by lines) and when a batched verdict may read differently from
the same candidate checked alone (then it is checked alone)."""
from __future__ import annotations

import re

from .screen import Screen
from ..verdict import Diagnostic

def in_file_order(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """rustc's order of diagnostics can depend on the rest of the crate (two unresolved attribute
    paths came out in either order); a verdict lists them by position, spanless ones last."""
    return sorted(diagnostics, key=lambda d: (d.line is None, d.line or 0, d.column or 0))


STD_PATH = re.compile(r"\b(?:std|core|alloc)::(?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*)")


def maybe_untrimmed(diagnostics: list[Diagnostic], k: int, scr: Screen, definers: dict[str, set[int]]) -> bool:
    """rustc prints a std type by its bare name (`Option`) only while no other item has that name,
    and not always once some errors were reported (a neighbour's unresolved type beside its
    `use std::prelude::v1::*` did it, on a Debian crate). Then the batch says
    `std::option::Option` where the candidate alone says `Option`. So a candidate is checked
    alone when a batched diagnostic spells out the path of a prelude type it does not define
    itself, or of any std item a neighbour has a namesake of."""
    names = {name for d in diagnostics for text in (d.message, d.label or "", *d.notes) for name in STD_PATH.findall(text)}
    return any((name in PRELUDE_TYPES and name not in scr.defined) or definers.get(name, set()) - {k} for name in names)


# The prelude's types: alone, rustc names them bare unless the candidate has a namesake (traits,
# e.g. `std::iter::Iterator` in E0277 messages, are spelled out either way).
PRELUDE_TYPES = {"Option", "Result", "Vec", "String", "Box"}


BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def may_miss_cfg_note(diagnostics: list[Diagnostic], text: str, scr: Screen) -> bool:
    """rustc adds "found an item that was configured out" to a name it cannot find when the crate
    root holds a `#[cfg]`-disabled item of that name. In a batch the candidate's items are not at
    the root, so the note is missing: a candidate whose error names an item it defines itself, and
    that uses `cfg`, is checked alone."""
    return "cfg" in text and any(
        d.severity == "error" and any(name in scr.defined for name in BACKTICKED.findall(d.message))
        for d in diagnostics)


MIN_PART_LINES = 300


def spread(groups: list[list[int]], jobs: int, lines) -> list[list[int]]:
    """Split each group into one part per worker (a rustc call uses one core), heaviest parts
    first, so every worker gets its share of each group and they end together: groups differ in
    cost per line (failing candidates cost rustc more), so only splitting every group balances.
    `lines(i)` is the length of candidate i."""
    if jobs <= 1:
        return [g for g in groups if g]
    parts: list[tuple[int, list[int]]] = []
    for group in groups:
        count = max(1, min(jobs, len(group), sum(lines(i) for i in group) // MIN_PART_LINES))
        size, extra = divmod(len(group), count)
        start = 0
        for p in range(count):
            part = group[start:start + size + (p < extra)]
            start += len(part)
            parts.append((sum(lines(i) for i in part), part))
    return [g for _, g in sorted(parts, key=lambda lp: -lp[0]) if g]


def conflict_free_groups(indices: list[int], screens: dict[int, Screen], size: int) -> list[list[int]]:
    """Greedy grouping so no candidate shares a batch with one that defines a name it uses but
    does not define itself (rustc would suggest importing it from the other candidate)."""
    groups: list[tuple[list[int], set[str], set[str]]] = []
    for i in indices:
        scr = screens[i]
        free = scr.free_names
        for members, defined, free_union in groups:
            if len(members) < size and not (free & defined) and not (scr.defined & free_union):
                members.append(i)
                defined |= scr.defined
                free_union |= free
                break
        else:
            groups.append(([i], set(scr.defined), set(free)))
    return [members for members, _, _ in groups]
