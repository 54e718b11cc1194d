"""Vox declarations from a small structural parser (no Vox grammar ships in any installable
package). It knows strings, comments and brace nesting, which is all a declaration's span needs:
decorators and `///` docs above a head keyword at column 0, then the head up to its body, then
the balanced `{ ... }` body (or, for `type X = | A | B`, the lines up to the next declaration).
A user-supplied compiled tree-sitter grammar for Vox can be used instead (`vox_grammar`)."""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field

from oracles.errors import InputError

HEADS = ("fn", "component", "table", "query", "mutation", "server", "tool", "resource", "form", "index", "type",
         "actor", "workflow", "activity", "state_machine", "module", "routes")
RETIRED_DECORATORS = ("table", "query", "mutation", "server", "component", "endpoint", "page", "fixture", "mock",
                      "mcp.tool")
# `tool "description" name(...)` and `resource "uri" "description" name()`: strings come before the name.
HEAD_LINE = re.compile(r"^((?:@[A-Za-z_][\w.]*(?:\([^)]*\))?\s+)*)(?:pub\s+)?(" + "|".join(HEADS)
                       + r')\b\s*(?:"(?:[^"\\\n]|\\.)*"\s*)*([A-Za-z_][A-Za-z0-9_]*)?')
DECORATOR = re.compile(r"^@([A-Za-z_][A-Za-z0-9_.]*)")
NEXT_TOP = re.compile(r"^(?:@|///|(?:pub\s+)?(?:" + "|".join(HEADS) + r")\b)", re.M)
RETIRED_IN_CODE = (re.compile(r"\)\s*->"), re.compile(r"^\s*ret\b", re.M))


class VoxSyntaxError(InputError):
    """A Vox file the structural parser cannot read."""


class GrammarUnloadable(InputError, OSError):
    """A `vox_grammar` library that cannot be loaded, or that is not a tree-sitter grammar."""


@dataclass
class VoxItem:
    kind: str
    name: str
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    doc: str
    decorators: list[str]
    signature: str
    params: str
    return_type: str
    body: str
    retired: bool
    near_parse_error: bool = False
    text: str = ""


@dataclass
class VoxFile:
    items: list[VoxItem] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)  # declarations left out: no name to give them


def _scan_code(text: str, start: int):
    """Yield (index, char) of code characters from `start`, skipping strings and comments."""
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        yield i, c
        i += 1


def _match_brace(text: str, open_at: int) -> int:
    """Index just past the `}` matching the `{` at `open_at`; VoxSyntaxError if unbalanced."""
    depth = 0
    for i, c in _scan_code(text, open_at):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise VoxSyntaxError(f"unclosed `{{` opened at byte {open_at}")


def masked(text: str) -> str:
    """`text` with comments and string contents blanked (same length: offsets stay valid)."""
    out = list(text)
    code = {i for i, _ in _scan_code(text, 0)}
    for i, c in enumerate(text):
        if i not in code and c not in '"\n':
            out[i] = " "
    return "".join(out)


def _first_code(text: str, start: int, chars: str) -> int | None:
    for i, c in _scan_code(text, start):
        if c in chars:
            return i
    return None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, c in enumerate(text):
        if c == "\n":
            starts.append(i + 1)
    return starts


def parse_vox(text: str) -> VoxFile:
    out = VoxFile()
    starts = _line_starts(text)
    lines = text.split("\n")
    byte_of = _char_to_byte(text)
    row = 0
    while row < len(lines):
        line = lines[row]
        head = HEAD_LINE.match(line)
        if not head:
            row += 1
            continue
        # Leading decorators, docs (and metadata comments) directly above the head.
        first = row
        while first > 0 and (lines[first - 1].startswith("@") or lines[first - 1].startswith("///")
                             or lines[first - 1].startswith("// ANCHOR") or lines[first - 1].startswith("// STABLE")):
            first -= 1
        inline_decorators = head.group(1).split()
        kind, name = head.group(2), head.group(3) or ""
        start = starts[first]
        head_at = starts[row]
        try:
            end = _declaration_end(text, head_at, kind)
        except VoxSyntaxError as exc:
            out.errors.append(f"line {row + 1}: {exc}")
            for item in out.items[-1:]:
                item.near_parse_error = item.end_line >= row - 1
            break  # nothing after an unbalanced brace can be trusted
        item_text = text[start:end]
        above = lines[first:row]
        decorators = [a for a in above if a.startswith("@")] + [d for d in inline_decorators if d.startswith("@")]
        doc = "\n".join(a[3:].removeprefix(" ") for a in above if a.startswith("///"))
        body_at = _first_code(text, head_at, "{=")
        signature = text[head_at:body_at].strip() if body_at is not None and body_at < end else text[head_at:end].strip()
        params, ret = _params_and_return(signature)
        retired = any(DECORATOR.match(d) and DECORATOR.match(d).group(1) in RETIRED_DECORATORS for d in decorators) \
            or any(p.search(item_text) for p in RETIRED_IN_CODE)
        end_row = text.count("\n", 0, end - 1 if end > 0 else 0)
        if not name:
            out.unnamed.append(f"line {row + 1}: `{kind}` declaration without a name: {line.strip()[:80]}")
            row = end_row + 1
            continue
        out.items.append(VoxItem(
            kind=kind, name=name, start_byte=byte_of(start), end_byte=byte_of(end), start_line=first + 1,
            end_line=end_row + 1, doc=doc, decorators=decorators, signature=signature, params=params,
            return_type=ret, body=text[body_at:end] if body_at is not None and body_at < end else "",
            retired=retired, text=item_text,
        ))
        row = end_row + 1
    return out


def _declaration_end(text: str, head_at: int, kind: str) -> int:
    """A braced body ends at its matching brace; `type X = | A | B` ends before the next top-level line."""
    brace = _first_code(text, head_at, "{")
    eq = _first_code(text, head_at, "=")
    next_top = NEXT_TOP.search(text, head_at + 1)
    limit = next_top.start() if next_top else len(text)
    if kind == "type" and eq is not None and (brace is None or eq < brace) and eq < limit:
        return len(text[:limit].rstrip())
    if brace is None or brace >= limit:
        return len(text[:limit].rstrip())  # a bodiless declaration: up to the next one
    return _match_brace(text, brace)


def _params_and_return(signature: str) -> tuple[str, str]:
    open_at = masked(signature).find("(")  # not a parenthesis inside a head's description string
    if open_at < 0:
        return "", ""
    depth = 0
    for i in range(open_at, len(signature)):
        if signature[i] == "(":
            depth += 1
        elif signature[i] == ")":
            depth -= 1
            if depth == 0:
                rest = signature[i + 1:].strip()
                ret = rest[3:].strip() if rest.startswith("to ") else rest.removeprefix("->").strip()
                return signature[open_at:i + 1], ret
    return signature[open_at:], ""


def _char_to_byte(text: str):
    """Character offset -> UTF-8 byte offset (identity for ASCII files)."""
    if text.isascii():
        return lambda i: i
    return lambda i: len(text[:i].encode())


# -- optional: a compiled tree-sitter grammar for Vox ---------------------------------------------

def load_grammar(library_path: str, name: str = "vox"):
    """A tree-sitter Language from a compiled grammar (`tree_sitter_<name>` in a shared library)."""
    from tree_sitter import Language

    try:
        lib = ctypes.cdll.LoadLibrary(library_path)
    except OSError as exc:
        raise GrammarUnloadable(f"cannot load the Vox grammar {library_path}: {exc}") from exc
    try:
        factory = getattr(lib, f"tree_sitter_{name}")
    except AttributeError as exc:
        raise GrammarUnloadable(f"cannot load the Vox grammar {library_path}: it has no `tree_sitter_{name}` "
                                f"function (not a {name} grammar?)") from exc
    factory.restype = ctypes.c_void_p
    return Language(factory())


def parse_vox_with_grammar(data: bytes, language) -> VoxFile:
    """Top-level named nodes whose type names a Vox head become declarations (name from the
    `name` field). Docs and decorators come from the preceding sibling nodes, as in the parser."""
    from tree_sitter import Parser

    tree = Parser(language).parse(data)
    out = VoxFile()
    for node in tree.root_node.named_children:
        kind = next((h for h in HEADS if node.type.startswith(h)), None)
        if kind is None:
            continue
        name_node = node.child_by_field_name("name")
        text = data[node.start_byte:node.end_byte].decode()
        if name_node is None:
            out.unnamed.append(f"line {node.start_point.row + 1}: `{kind}` declaration without a name")
            continue
        out.items.append(VoxItem(
            kind=kind, name=name_node.text.decode(), start_byte=node.start_byte,
            end_byte=node.end_byte, start_line=node.start_point.row + 1, end_line=node.end_point.row + 1,
            doc="", decorators=[], signature=text.split("{", 1)[0].strip(), params="", return_type="",
            body="", retired=any(p.search(text) for p in RETIRED_IN_CODE), near_parse_error=node.has_error,
            text=text))
    if tree.root_node.has_error:
        out.errors.append("tree-sitter reported a parse error")
    return out
