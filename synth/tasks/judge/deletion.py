"""Whether a repair answer compiles only because code is gone: the lines that held the error, or
the rest of the declaration around them.

Read line by line (spacing inside a line aside, `//` comments and, in Rust, lines that hold
nothing but comments or statements that do nothing left out: a line commented out with `/* */`
or traded for `let _ = 0;` is gone) and sized in tokens, not lines, so that layout decides
nothing: `{ std::process::abort() }` on three lines is no longer than one line of real work."""
from __future__ import annotations

import difflib
import re
from collections import Counter

from synth.rust_syntax import does_nothing, rust_parser, walk

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\"(?:\\.|[^\"\\])*\"|\S")
STATEMENTS = ("expression_statement", "let_declaration", "empty_statement")  # not a block's tail value
KEPT_AT_LEAST = 0.5  # of the untouched body's tokens


def deletes_the_error(code: str, broken: str, reference: str, lang: str = "rust") -> bool:
    """The answer compiles because code is gone, not because it was fixed: of some change the
    mutation made it has neither the broken nor the original form, and its body is smaller than
    the broken one's (the erroring statement dropped, `a - f(x)` cut to `a`, a wrong body traded
    for `0` while the wrong signature is put right), or it keeps less than half of the body the
    mutation did not touch (the signature put right, the body traded for `0`)."""
    quiet = (lambda text: code_lines(without_no_ops(text))) if lang == "rust" else code_lines
    answer = quiet(code)
    kept = set(answer)
    changes = _changes(broken, reference)
    was = {line for old, _ in changes for line in old}
    # the broken code's own no-op lines are not counted either, but for the erroring ones (`x;`)
    own_no_ops = Counter(code_lines(broken)) - Counter(quiet(broken))
    size = _tokens(_body(quiet(broken))) + sum(_tokens([line]) * n for line, n in own_no_ops.items() if line in was)
    # sized by the body: an attribute the answer leaves out (`#[cfg(..)]` above an impl) is no code gone
    # (a line the mutation only added has no original form: leaving it out is the fix, not a deletion)
    if any(new and not (set(old) & kept) and not (set(new) & kept) for old, new in changes) and \
            _tokens(_body(answer)) < size:
        return True
    untouched = [line for line in _body(code_lines(broken)) if line not in was]
    return _tokens([line for line in untouched if line in kept]) < KEPT_AT_LEAST * _tokens(untouched)


def changed_lines(broken: str, reference: str) -> tuple[set[str], set[str]]:
    """The lines the mutation changed: their broken form, and their original form (none where the
    mutation only added lines, so that deleting them is the fix)."""
    changes = _changes(broken, reference)
    return {line for old, _ in changes for line in old}, {line for _, new in changes for line in new}


def _changes(broken: str, reference: str) -> list[tuple[list[str], list[str]]]:
    """Each change the mutation made: its broken lines and their original form (a run of lines
    replaced by as many, line by line: a signature and the body line under it are two changes)."""
    broken_lines, reference_lines = code_lines(broken), code_lines(reference)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=broken_lines, b=reference_lines, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            out += [([old], [new]) for old, new in zip(broken_lines[i1:i2], reference_lines[j1:j2])]
        elif tag != "equal":
            out.append((broken_lines[i1:i2], reference_lines[j1:j2]))
    return out


def _body(lines: list[str]) -> list[str]:
    """The lines after the first that opens a brace: the body, not the attributes and signature."""
    opening = next((i for i, line in enumerate(lines) if "{" in line.split()), None)
    return lines[opening + 1:] if opening is not None else []


def code_lines(code: str) -> list[str]:
    """Its non-empty lines without `//` comments, as tokens one space apart: `f(a,b)` is `f(a, b)`."""
    return [line for line in (" ".join(TOKEN.findall(raw.split("//", 1)[0])) for raw in code.splitlines()) if line]


def _tokens(lines: list[str]) -> int:
    return sum(len(TOKEN.findall(line)) for line in lines)


def without_no_ops(code: str) -> str:
    """The code with each line that holds nothing but comments and statements that do nothing
    (`let _ = 0;`, `;`, `1;`) emptied: what a line-by-line comparison should read (an erroring
    line commented out with `/* */`, or traded for `let _ = 0;`, is gone, not rewritten). A line
    with code on it is kept whole (`unsafe { f() };` parses as a statement and an empty one)."""
    data = code.encode()
    quiet = bytearray(len(data))  # 1 where a byte belongs to a comment or to a statement that does nothing
    for node in walk(rust_parser().parse(data).root_node):
        if node.type in ("line_comment", "block_comment") or (node.type in STATEMENTS and does_nothing(node)):
            quiet[node.start_byte:node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
    lines, start = [], 0
    for line in data.split(b"\n"):
        spoken = any(not quiet[start + i] and byte not in b" \t\r" for i, byte in enumerate(line))
        lines.append(line if spoken else b"")
        start += len(line) + 1
    return b"\n".join(lines).decode()
