"""A mutant spliced into its crate (a Job); which jobs may share one cargo check; and whose a
diagnostic of that check is (the rules behind oracles/crate_batch.py's exactness)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .rustc_diagnostics import _all_text
from .verdict import Diagnostic, Splice

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Job:
    """One splice to check, and the names that decide which others it may share a check with."""

    splice: Splice
    name: str  # the function the splice replaces
    idents: frozenset[str]  # every name its text uses
    kind: str = ""  # splices of one kind (e.g. one mutation operator) stop rustc in the same phase
    new_header: bool = False  # the text before the body changed: callers elsewhere may break


def _header(text: str) -> str:
    """The text before the body, without doc comments and attributes (doc examples hold braces)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "#[", "#!")))
    return " ".join(code.split("{", 1)[0].split())


def job_of(splice: Splice, name: str, original: str = "", kind: str = "") -> Job:
    """`original`: the text the splice replaces (to tell whether the header changes)."""
    return Job(splice, name, frozenset(IDENT.findall(splice.text)), kind,
               bool(original) and _header(original) != _header(splice.text))


def is_sentinel(raw: dict) -> bool:
    return any("__synth_sentinel" in t.get("text", "") for sp in raw.get("spans", []) for t in sp.get("text") or [])


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


def cargo_failure(run, errors: list[Diagnostic]) -> list[Diagnostic]:
    if run.timed_out or errors or run.returncode in (0, None):
        return []
    tail = [line for line in run.stderr.strip().splitlines() if line.strip()][-3:]
    return [Diagnostic(code="cargo-exit", severity="error", message=f"cargo exited {run.returncode}: " + " | ".join(tail))]


def batch_groups(items: list[tuple[int, Job]], size: int) -> list[list[int]]:
    """Batches in which no two splices overlap, share a function, or name each other's function."""
    batches: list[tuple[list[int], list[Job]]] = []
    for i, job in sorted(items, key=lambda it: (it[1].kind, it[0])):
        for members, jobs in batches:
            if len(members) < size and jobs[0].kind == job.kind and not any(conflict(job, other) for other in jobs):
                members.append(i)
                jobs.append(job)
                break
        else:
            batches.append(([i], [job]))
    return [members for members, _ in batches]


def conflict(a: Job, b: Job) -> bool:
    sa, sb = a.splice, b.splice
    if sa.path == sb.path and sa.start_byte < sb.end_byte and sb.start_byte < sa.end_byte:
        return True
    # A body-only change is invisible to other functions; a new header may break its callers.
    return (a.new_header and a.name in b.idents) or (b.new_header and b.name in a.idents)
