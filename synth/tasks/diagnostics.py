"""How compiler errors are shown to a model: each error with its code and message, where it is in
the declaration as the prompt shows it, the line it points at with a caret under the span (as
rustc prints it), and rustc's notes. Repair rows show their mutant's errors so; a
compile-feedback turn shows an answer's own (synth/tasks/feedback.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from oracles.verdict import Verdict



def render_diagnostics(verdict: Verdict, shown: str, offset: int = 0) -> str:
    """The compiler's errors, positioned in the declaration as the prompt shows it (`shown`, which
    starts `offset` lines into the checked file), each with the line it points at and a caret under
    the span, as rustc prints them; an error in the context, or elsewhere in the crate, says so."""
    lines = []
    for d in verdict.errors:
        head = f"error[{d.code}]: {d.message}" if d.code else f"error: {d.message}"
        if d.path:
            head += f"\n --> {d.path}, line {d.line} (elsewhere in the crate)"
        elif d.line is not None and d.line > offset:
            head += f"\n --> line {d.line - offset}, column {d.column}"
            head += source_excerpt(shown, d.line - offset, d.column, d.end_line and d.end_line - offset,
                                   d.end_column, d.label)
        elif d.line is not None:
            head += f"\n --> in the context, line {d.line}"
        lines.append("\n".join([head, *(f"  = {n}" for n in d.notes)]))
    return "\n".join(lines)


def source_excerpt(text: str, line: int, column: int | None, end_line: int | None, end_column: int | None,
                   label: str | None) -> str:
    """rustc's picture of a span: the line of `text` it starts on, and a caret under it (to the end
    of that line when the span goes on) with the span's label. A small model finds the broken spot
    from this far more often than from a line and column number."""
    source = text.split("\n")
    if not 1 <= line <= len(source):
        return f": {label}" if label else ""
    code = source[line - 1].replace("\t", "    ")
    start = max(0, (column or 1) - 1)
    end = (end_column or 0) - 1 if end_line == line else len(code)
    carets = "^" * max(1, min(end, len(code)) - start) if start < len(code) else "^"
    gutter = " " * len(str(line))
    tail = f" {label}" if label else ""
    return f"\n{gutter} |\n{line} | {code}\n{gutter} | {' ' * min(start, len(code))}{carets}{tail}"
