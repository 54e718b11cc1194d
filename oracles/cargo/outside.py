"""Whose a diagnostic of a batched crate check is: the splice holding it, or for an error outside
every splice, the one whose new signature the code around it names.

A body-only change is invisible to other functions; a changed signature may break the code that
names it. So an error outside every splice belongs to the one splice with a changed signature
whose names the function around the error uses. Where that is not exactly one splice (or the
error is not inside a function of the crate), the batch cannot be read and is split.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import tree_sitter_rust
from tree_sitter import Language, Parser

from .jobs import is_sentinel
from ..rustc.diagnostics import _all_spans, _all_text, is_summary, locate, spanless
from ..verdict import Diagnostic

@functools.cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_rust.language()))


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REGIONS = ("function_item", "macro_definition", "const_item", "static_item")


@functools.lru_cache(maxsize=256)
def _function_spans(data: bytes) -> list[tuple[int, int, frozenset[str]]]:
    """(first line, last line, names used) of every function (and macro definition, const,
    static: code that names others) in a file (1-based lines)."""
    out, todo = [], [_parser().parse(data).root_node]
    while todo:
        node = todo.pop()
        if node.type in REGIONS:
            out.append((node.start_point[0] + 1, node.end_point[0] + 1,
                        frozenset(IDENT.findall(node.text.decode("utf-8", "replace")))))
        todo.extend(node.children)
    return out


def users(root: Path) -> dict[str, frozenset[int]]:
    """For each name, the functions of the crate (numbered) whose text uses it."""
    out: dict[str, set[int]] = {}
    number = 0
    for path in sorted(root.rglob("*.rs")):
        if "target" in path.relative_to(root).parts:
            continue
        for _, _, names in _function_spans(path.read_bytes()):
            number += 1
            for name in names:
                out.setdefault(name, set()).add(number)
    return {name: frozenset(fns) for name, fns in out.items()}


def names_around(root: Path, path: str, line: int) -> frozenset[str] | None:
    """The names the outermost function (or macro definition, const, static) around `line` of the
    crate file `path` uses (its callees, methods and types), or None if the line is in none."""
    try:
        data = (root / path).read_bytes()
    except OSError:
        return None
    around = [(first, last, names) for first, last, names in _function_spans(data) if first <= line <= last]
    return max(around, key=lambda f: f[1] - f[0])[2] if around else None


def call_site(raw: dict) -> dict | None:
    """The primary span, followed out of macro expansions to where the code was written."""
    primary = [s for s in raw.get("spans", []) if s.get("is_primary")]
    span = primary[0] if primary else None
    while span is not None and span.get("expansion") and span["expansion"].get("span"):
        span = span["expansion"]["span"]
    return span


def owner_of(raw: dict, sites) -> int | None:
    """The splice holding the diagnostic's primary span (followed out of macros), if exactly one."""
    owners = set()
    for span in raw.get("spans", []):
        if not span.get("is_primary"):
            continue
        while span is not None:
            hit = [k for k, s in enumerate(sites) if s.path == span.get("file_name")
                   and s.region.first <= span["line_start"] <= s.region.last]
            if hit:
                owners.add(hit[0])
                break
            expansion = span.get("expansion")
            span = expansion.get("span") if expansion else None
    return owners.pop() if len(owners) == 1 else None


def outside_names(run) -> set[str]:
    """The names on the source lines of errors outside every splice (a broken call names its callee)."""
    names = set()
    for raw in run.messages:
        if raw.get("level") == "error" and owner_of(raw, run.sites) is None:
            for span in raw.get("spans", []):
                for line in span.get("text") or []:
                    names.update(IDENT.findall(line.get("text", "")))
    return names


def names_a_place(raw: dict, spliced: set[str], site) -> bool:
    """A type name with a place in a spliced file (`{closure@src/a.rs:40:9}`) outside the splice's
    own lines: its line number depends on the other splices."""
    for path in spliced:
        for m in re.finditer("@" + re.escape(path) + r":(\d+):", "\n".join(_all_text(raw))):
            if path != site.path or int(m.group(1)) not in site.region:
                return True
    return False


def elsewhere(run) -> list[tuple[dict, Diagnostic]]:
    """Errors outside every splice, with their file and pre-splice line (warnings dropped)."""
    out = []
    for raw in run.messages:
        if is_summary(raw) or raw.get("level") != "error" or owner_of(raw, run.sites) is not None:
            continue
        primary = [s for s in raw.get("spans", []) if s.get("is_primary")]
        if not primary:
            out.append((raw, spanless(raw)))
            continue
        span = primary[0]
        line = span["line_start"]
        for site in run.sites:  # back to the file's own numbering
            if site.path == span["file_name"] and line > site.region.last:
                line -= site.shift
        out.append((raw, spanless(raw).model_copy(update={"path": span["file_name"], "line": line,
                                                          "column": span["column_start"], "label": span.get("label")})))
    return out


def _names_at(run, root: Path, span: dict) -> frozenset[str] | None:
    return names_around(root, span["file_name"], pre_splice_line(run, span["file_name"], span["line_start"]))


def _definition_site(raw: dict) -> dict | None:
    primary = [s for s in raw.get("spans", []) if s.get("is_primary")]
    if not primary or primary[0].get("file_name", "").startswith("/") or not primary[0].get("expansion"):
        return None
    return primary[0]


def pre_splice_line(run, path: str, line: int) -> int:
    return line - sum(s.shift for s in run.sites if s.path == path and line > s.region.last)


def owners_outside(run, jobs, root: Path) -> tuple[dict[int, list[Diagnostic]], set[int], str | None]:
    """Each error outside every splice given to the one splice (by index in `jobs`) with a new
    signature that the function around it names; the splices of errors whose function names
    several (to be checked again apart); else why the run cannot be read so."""
    given: dict[int, list[Diagnostic]] = {}
    shared: set[int] = set()
    headers = [k for k, job in enumerate(jobs) if job.seen]
    spliced = {s.path for s in run.sites}
    for raw, diagnostic in elsewhere(run):
        span = call_site(raw)
        if span is None or span.get("file_name", "").startswith("/"):
            return {}, set(), "error outside every splice"
        names = _names_at(run, root, span)
        defined = _definition_site(raw)  # code a macro wrote: the names its definition uses too
        if defined is not None and defined is not span:
            inside = _names_at(run, root, defined)
            names = inside if names is None else names | (inside or frozenset())
        culprits = [k for k in headers if names is not None and jobs[k].seen & names]
        if not culprits or any(names_a_place(raw, spliced, run.sites[k]) for k in culprits):
            return {}, set(), "error outside every splice"
        if len(culprits) > 1:
            shared.update(culprits)
        else:
            given.setdefault(culprits[0], []).append(diagnostic)
    return {k: v for k, v in given.items() if k not in shared}, shared, None


def attribute(run, changed: frozenset[int] = frozenset()) -> tuple[list[list[Diagnostic]], set[int], str | None]:
    """Each splice's own diagnostics (in its coordinates), the splices whose diagnostics read
    differently in company, and why the whole run cannot be read (None: it can). A diagnostic
    may point into another splice whose signature is as it was (`changed`: those whose is not):
    a verdict keeps no position but its own, and the signature reads the same."""
    own: list[list[Diagnostic]] = [[] for _ in run.sites]
    contaminated: set[int] = set()
    spliced = {s.path for s in run.sites}
    for raw in run.messages:
        if is_summary(raw) or raw.get("level") not in ("error", "warning") or is_sentinel(raw):
            continue
        k = owner_of(raw, run.sites)
        if k is None:
            continue
        site = run.sites[k]
        located = locate(raw, site.path, [site.region])
        if located.diagnostic is None:
            if raw.get("level") == "error":  # an error it caused that reads as none of its lines:
                contaminated.add(k)  # alone it fails with cargo's exit; in company it would pass
            continue
        others = [s for j, s in enumerate(run.sites) if j != k and j in changed]
        if any(sp.get("file_name") == o.path and o.region.first <= sp.get("line_start", 0) <= o.region.last
               for sp in _all_spans(raw) for o in others) or names_a_place(raw, spliced, site):
            contaminated.add(k)
        own[k].append(located.diagnostic)
    if run.returncode is None:
        return own, contaminated, "timed out"
    # diagnostics past the cap are missing: whose they were is unknown (checked in smaller batches)
    return own, contaminated, "output cut at the cap" if run.cut else None


def by_place(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics outside the splices in the crate's order: file, line, column."""
    return sorted(diagnostics, key=lambda d: (d.path or "", d.line or 0, d.column or 0))
