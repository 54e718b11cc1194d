"""rustc's JSON diagnostics, mapped back onto the candidate they belong to.

A batch file holds many candidates, each on its own lines. A diagnostic belongs to a candidate
when its primary span (followed out of macro expansions) lies on that candidate's lines. If any
part of it points at another candidate, or names a batch module, it is "contaminated": the
batch changed what the compiler said, so the candidate must be checked again apart.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..verdict import Diagnostic, Fix, json_lines

BATCH_MARK = "__synth_"
SUMMARY = re.compile(r"^(aborting due to|\d+ warnings? emitted|Some errors have|For more information)")


@dataclass(frozen=True)
class Region:
    """Lines [first, last] of the batch file that hold one candidate's text (1-based)."""

    first: int
    last: int

    def __contains__(self, line: int) -> bool:
        return self.first <= line <= self.last


@dataclass
class Located:
    diagnostic: Diagnostic | None  # None: not attributable to exactly one region
    region: int | None
    contaminated: bool
    internal_error: bool = False


def parse_json_lines(stderr: str) -> list[dict]:
    return json_lines(stderr)[0]


def _site(span: dict, file_name: str) -> dict | None:
    """The span itself if it is in our file, else the macro call site that brought it there."""
    while span is not None:
        if span.get("file_name") == file_name:
            return span
        expansion = span.get("expansion")
        span = expansion.get("span") if expansion else None
    return None


def _all_spans(diag: dict):
    for span in diag.get("spans", []):
        yield span
    for child in diag.get("children", []):
        yield from _all_spans(child)


def _all_text(diag: dict):
    yield diag.get("message", "")
    for span in diag.get("spans", []):
        yield span.get("label") or ""
        yield span.get("suggested_replacement") or ""
    for child in diag.get("children", []):
        yield from _all_text(child)


def _note(child: dict) -> str:
    """A child message as rustc words it inline (`help: MESSAGE: `SUGGESTION``), each suggestion
    once: rustc often has it in the message already (`implement the missing item: `fn f..``),
    and a message ending in ":" introduces it itself (`... with it:`)."""
    message = child.get("message", "")
    text = f"{child.get('level', 'note')}: {message}"
    replacements = []
    for span in child.get("spans", []):
        replacement = (span.get("suggested_replacement") or "").strip()
        if replacement and replacement not in replacements and f"`{replacement}`" not in message:
            replacements.append(replacement)
    if replacements:
        text += (" " if message.endswith(":") else ": ") + " | ".join(f"`{r}`" for r in replacements)
    return text


def _notes(diag: dict) -> list[str]:
    return [_note(c) for c in diag.get("children", []) if not _order_dependent(c)]


def _order_dependent(child: dict) -> bool:
    """rustc says "`#[warn(x)]` on by default" only at a lint's first firing in the whole crate,
    so whether a candidate gets it depends on its neighbours: never part of a verdict. Neither is
    the note that a long type name "has been written to" a file with a random name in the (deleted)
    work directory, nor its companion hint."""
    message = child.get("message", "")
    implied = message.startswith("`#[") and " implied by `#[" in message  # also only at a first firing
    return child.get("level") == "note" and (message.endswith("on by default") or implied or LONG_TYPE_FILE in message
                                             or message.startswith(VERBOSE_HINT))


LONG_TYPE_FILE = "has been written to"
VERBOSE_HINT = "consider using `--verbose` to print the full type name"


def _relocate(diag: dict, file_name: str, offset: int) -> dict:
    """rustc names places in type names (`{closure@batch.rs:2059:33}`): rewrite them to the
    candidate's own line, as checking it alone would print them."""
    pattern = re.compile(r"@" + re.escape(file_name) + r":(\d+):(\d+)(?:: (\d+):(\d+))?")

    def place(m):
        text = f"@{int(m.group(1)) - offset}:{m.group(2)}"
        return text + (f": {int(m.group(3)) - offset}:{m.group(4)}" if m.group(3) else "")

    return _rewrite_texts(diag, lambda text: pattern.sub(place, text))


def _rewrite_texts(diag: dict, rewrite) -> dict:
    """`diag` with `rewrite` applied to every human text in it (messages, labels, suggestions)."""
    def fix(value):
        if isinstance(value, str):
            return rewrite(value)
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: (fix(v) if k in ("message", "label", "suggested_replacement", "children", "spans") else v)
                    for k, v in value.items()}
        return value

    return fix(diag)


def is_summary(diag: dict) -> bool:
    return not diag.get("spans") and bool(SUMMARY.match(diag.get("message", "")))


@dataclass(frozen=True)
class Wrapper:
    """The batch module around one candidate, and the types the candidate defines at its top."""

    module: str
    types: frozenset[str] = frozenset()


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def _strip_own_module(diag: dict, wrapper: Wrapper) -> dict:
    """rustc prints `__synth_c3::Point` where the candidate alone would print `Point` (the name is
    no longer unique in the batch). For the candidate's top-level items the two are the same path,
    and so for members of its top-level types (`Shape::Rect`, `Parser::new`: rustc prints a member
    as its type's path and the member's name), so the wrapper is removed; anything else mentioning
    a batch module (`__synth_c3::nested::Deep`, which alone may print as `Deep`) stays and is
    contaminated."""
    same_path = [IDENT + r"(?![A-Za-z0-9_]|::)"]
    if wrapper.types:
        same_path.append("(?:" + "|".join(re.escape(t) for t in sorted(wrapper.types)) + ")::")
    pattern = re.compile(r"(crate::)?" + re.escape(wrapper.module) + r"::(?=" + "|".join(same_path) + ")")
    return _rewrite_texts(diag, lambda text: pattern.sub(lambda m: m.group(1) or "", text))


def _primary_sites(diag: dict, file_name: str) -> list[dict]:
    return [s for s in (_site(sp, file_name) for sp in diag.get("spans", []) if sp.get("is_primary")) if s]


def _owner(line: int, regions: list[Region]) -> int | None:
    """Index of the region holding `line` (regions are disjoint and in file order)."""
    k = bisect.bisect_right(regions, line, key=lambda r: r.first) - 1
    return k if k >= 0 and line in regions[k] else None


def locate(diag: dict, file_name: str, regions: list[Region], wrappers: list[Wrapper | None] | None = None) -> Located:
    """Attribute one rustc diagnostic to a region and convert it to the candidate's coordinates.
    `regions` are disjoint and in file order; `wrappers[i]` is the batch module around region i."""
    level = diag.get("level", "")
    if level not in ("error", "warning"):
        return Located(None, None, False, internal_error=level.startswith("error"))
    sites = _primary_sites(diag, file_name)
    owners = {_owner(s["line_start"], regions) for s in sites}
    if len(owners) != 1 or None in owners:
        return Located(None, None, False)
    index = owners.pop()
    region = regions[index]
    wrapper = wrappers[index] if wrappers else None
    if wrapper and any(wrapper.module in t for t in _all_text(diag)):
        diag = _strip_own_module(diag, wrapper)
    offset = region.first - 1
    places = [int(m) for t in _all_text(diag) for m in re.findall("@" + re.escape(file_name) + r":(\d+):", t)]
    # A closure's type names its file and line. Rewritten to the candidate's own line they read the
    # same; but where rustc prints the short form (`{closure@batch.rs:4069:33}`, no end), it decides
    # by the raw text's length whether to show the place or `{closure@...}`, and `batch.rs:4069` is
    # not as long as `candidate.rs:69`: in a batch, a short-form place means checked alone.
    short_place = "@" + re.escape(file_name) + r":\d+:\d+(?![\d:])"
    foreign_place = any(line not in region for line in places) or bool(
        wrappers and any(re.search(short_place, t) for t in _all_text(diag)))
    if places:
        diag = _relocate(diag, file_name, offset)
    sites = _primary_sites(diag, file_name)  # label and position from the rewritten diagnostic
    contaminated = foreign_place or any(BATCH_MARK in t for t in _all_text(diag)) or any(
        sp.get("file_name") == file_name and not (sp["line_start"] in region and sp["line_end"] in region)
        for sp in _all_spans(diag))
    primary = sites[0]
    code = (diag.get("code") or {}).get("code")
    diagnostic = Diagnostic(
        code=code, severity=level, message=diag.get("message", ""),
        line=primary["line_start"] - offset, column=primary["column_start"],
        end_line=primary["line_end"] - offset, end_column=primary["column_end"],
        label=primary.get("label"), notes=_notes(diag), fixes=_fixes(diag, file_name, region, offset),
    )
    return Located(diagnostic, index, contaminated)


def _fixes(diag: dict, file_name: str, region: Region, offset: int) -> list[Fix]:
    """The message's suggestions (its own spans' and each child's), each with every replacement
    in the candidate's lines; one that reaches outside them is left out."""
    fixes = []
    for part in (diag, *diag.get("children", [])):
        spans = [s for s in part.get("spans", []) if s.get("suggested_replacement") is not None]
        if spans and all(s.get("file_name") == file_name and s["line_start"] in region and s["line_end"] in region
                         for s in spans):
            fixes.append(Fix(applicability=spans[0].get("suggestion_applicability") or "Unspecified",
                             edits=[(s["line_start"] - offset, s["column_start"], s["line_end"] - offset,
                                     s["column_end"], s["suggested_replacement"]) for s in spans]))
    return fixes


def spanless(diag: dict) -> Diagnostic:
    """A message with no position (e.g. `main` missing): kept, positioned nowhere."""
    return Diagnostic(code=(diag.get("code") or {}).get("code"), severity=diag.get("level", "error"),
                      message=diag.get("message", ""), notes=_notes(diag))


def file_diagnostics(stderr: str, file_name: str, text: str) -> tuple[list[Diagnostic], bool]:
    """Diagnostics of a compile of one candidate file (no batch), and whether rustc crashed."""
    region = [Region(1, max(1, text.count("\n") + 1))]
    diagnostics, internal_error = [], False
    for raw in parse_json_lines(stderr):
        if is_summary(raw):
            continue
        located = locate(raw, file_name, region)
        internal_error |= located.internal_error
        if located.diagnostic is not None:
            diagnostics.append(located.diagnostic)
        elif raw.get("level") in ("error", "warning"):
            diagnostics.append(spanless(raw))
    return diagnostics, internal_error
