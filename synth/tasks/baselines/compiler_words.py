"""The best repair that needs no model: rules that read rustc's diagnostics and the broken code,
nothing else. A repair model is worth training only where it goes past this.

Each rule answers one kind of error rustc words plainly:
- a similar name it offers (`a local variable with a similar name exists: `x``, `there is a
  method `len` with a similar name`): put it in place of the name it did not find;
- a name it did not find and offers nothing for (E0425, E0609, E0560): the nearest name the code
  itself binds, or of the fields it lists as available;
- a mismatch where the return type is what rustc expected (`expected `bool`, found `usize``):
  the type it found, as return type;
- a literal of the wrong type (`expected `usize`, found `&str``, under `"0"`): a value of the
  type expected (the literal's own text where that is one: `"0"` -> `0`);
- a binding it says is not mutable (E0384, E0596, E0594): `mut` on it (`&mut self` for self);
- an import it suggests: the `use` line, at the top of the function's body;
and an error no rule speaks to gets its own suggestion (the first without placeholders), as
`rustc_all` applies it; where its only suggestion has placeholders (`provide the argument:
`(x, /* usize */)``), each is filled with the one binding the code declares with the type it
names (a parameter `n: usize`), else a value of that type (`0`, `""`, `false`,
`Default::default()`). That compiles, and whether it is the value meant no check without tests
can tell: a model's fix of the same kind is no repair beyond the compiler. Positions are the
declaration's own (synth/tasks/baselines/ moves them)."""
from __future__ import annotations

import difflib
import heapq
import re

from tree_sitter import Node

from oracles.verdict import Diagnostic
from synth.rust_syntax import node_text, rust_parser, walk

Edit = tuple[int, int, int, int, str]  # (line, column, end line, end column, text): 1-based, columns in characters
BACKTICKED = re.compile(r"`([^`]+)`")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
EXPECTED_FOUND = re.compile(r"expected `([^`]+)`, found `([^`]+)`")
NOT_MUTABLE = re.compile(r"(?:cannot assign twice to immutable variable|cannot borrow|cannot assign to) `\*?([^`]+)`")
UNRESOLVED = ("E0425", "E0609", "E0560")
TYPED_PLACEHOLDER = re.compile(r"/\* ([^*]+?) \*/")
LITERAL = re.compile(r'-?[0-9][0-9_]*(\.[0-9_]+)?([iuf](8|16|32|64|128|size))?|"[^"\\]*"|true|false|\'.\'')
EXPECTED = re.compile(r"expected `([^`]+)`, found ")  # found `&str`, found integer
NUMBER = re.compile(r"-?[0-9][0-9_]*(\.[0-9_]+)?")
NEAREST = 4  # names near an unresolved one tried (`word_options`)
FILLS = 8  # placeholder fillings tried (`word_options`)
INTEGERS = frozenset(f"{sign}{bits}" for sign in "ui" for bits in ("8", "16", "32", "64", "128", "size"))


def word_edits(code: str, diagnostics: list[Diagnostic]) -> list[Edit]:
    """The rules' edits for every error, or its own suggestion where no rule speaks."""
    tree = rust_parser().parse(code.encode()).root_node
    bindings = typed_bindings(tree)
    edits = []
    for d in diagnostics:
        if d.severity == "error":
            edits.extend(next((options[0] for options in _rules(code, tree, d, bindings) if options), []))
    return edits


def word_options(code: str, tree: Node, d: Diagnostic, bindings: dict[str, list[str]],
                 names: list[str]) -> list[list[Edit]]:
    """Every way the rules and rustc's own suggestions answer one error, the rules' choice first
    (`word_edits`': each rule's first option is the one it gives there), then each other name
    offered or near, suggestion, import and placeholder fill (with each name the code binds,
    `names`): what a user clicking through the quick fixes tries."""
    out: list[list[Edit]] = []
    for option in (o for options in _rules(code, tree, d, bindings, names) for o in options):
        if option not in out:
            out.append(option)
    return out


def _rules(code: str, tree: Node, d: Diagnostic, bindings: dict[str, list[str]], names: list[str] | None = None):
    """Each rule's options for the error (none empty), the likeliest first, in the rules' order,
    lazily (the first rule that has one decides `word_edits`); with `names`, placeholders are
    also filled with each name the code binds, and bindings of the type expected are tried."""
    rules = (lambda: [[_replace(d, n)] for n in _similar_names(code, d)],
             lambda: [[_replace(d, n)] for n in _nearest_names(code, tree, d, NEAREST)],
             lambda: [_found_type(code, tree, d)], lambda: [_literal_of(code, d)],
             lambda: [_make_mutable(code, tree, d)], lambda: _imports(code, tree, d),
             lambda: suggestions(d), lambda: _fills(d, bindings, names),
             lambda: [[_replace(d, n)] for n in _of_expected_type(d, bindings)] if names is not None else [])
    for rule in rules:
        yield [option for option in rule() if option]


def first_fix(d: Diagnostic) -> list[Edit]:
    """The diagnostic's first suggestion that has no placeholder."""
    usable = suggestions(d)
    return usable[0] if usable else []


def suggestions(d: Diagnostic) -> list[list[Edit]]:
    """The diagnostic's suggestions that have no placeholder, in its order."""
    return [[tuple(e) for e in f.edits] for f in d.fixes if f.applicability != "HasPlaceholders"]


def _fills(d: Diagnostic, bindings: dict[str, list[str]], names: list[str] | None) -> list[list[Edit]]:
    """The diagnostic's first suggestion whose only placeholders are typed ones (`/* u32 */`),
    each filled with the one binding of the code declared with that type (a parameter `s: &str` for
    `/* &str */`: rust-analyzer's "fill arguments" does as much), else a value of its type; with
    `names`, then the other choices for each placeholder (`_fill_choices`), up to FILLS options."""
    for fix in d.fixes:
        texts = [e[4] for e in fix.edits]
        if fix.applicability == "HasPlaceholders" and any(TYPED_PLACEHOLDER.search(t) for t in texts) \
                and not any("todo!" in t or "/*" in TYPED_PLACEHOLDER.sub("", t) for t in texts):
            choices = [_fill_choices(m.group(1), bindings, names) for t in texts for m in TYPED_PLACEHOLDER.finditer(t)]
            out = []
            for picked in in_order([len(c) for c in choices], FILLS if names is not None else 1):
                values = iter([choices[n][k] for n, k in enumerate(picked)])
                out.append([(*e[:4], TYPED_PLACEHOLDER.sub(lambda _, v=values: next(v), e[4])) for e in fix.edits])
            return out
    return []


def _fill_choices(hole: str, bindings: dict[str, list[str]], names: list[str] | None) -> list[str]:
    """A placeholder's values: the one binding of its type, else a value of the type; with
    `names`, then each binding of its type, each other name the code binds, a value of the type."""
    typed = bindings.get(_squeezed(hole), [])
    first = typed[0] if len(typed) == 1 else value_of(hole)
    return [first] if names is None else list(dict.fromkeys([first, *typed, *names, value_of(hole)]))


def in_order(sizes: list[int], limit: int):
    """Up to `limit` choices of one index per size, the smallest sum of indexes first (all zeros
    first): the likeliest combinations of alternatives before the rest."""
    if not sizes or min(sizes) == 0:
        return
    start = tuple(0 for _ in sizes)
    seen, heap = {start}, [(0, start)]
    for _ in range(limit):
        if not heap:
            return
        _, picked = heapq.heappop(heap)
        yield picked
        for n in range(len(sizes)):
            step = picked[:n] + (picked[n] + 1,) + picked[n + 1:]
            if step[n] < sizes[n] and step not in seen:
                seen.add(step)
                heapq.heappush(heap, (sum(step), step))


def typed_bindings(tree: Node) -> dict[str, list[str]]:
    """The names the code binds with a type written beside them (parameters, `let x: T`), by that
    type, spaces squeezed."""
    out: dict[str, list[str]] = {}
    for node in walk(tree):
        if node.type in ("parameter", "let_declaration") and node.child_by_field_name("type") is not None:
            pattern = node.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                out.setdefault(_squeezed(node_text(node.child_by_field_name("type"))), []).append(node_text(pattern))
    return out


def bound_names(tree: Node) -> list[str]:
    """Every name the code binds (parameters, `self`, `let`, `for` and closure parameters), in order."""
    out = []
    for node in walk(tree):
        if node.type == "self_parameter":
            out.append("self")
        elif node.type in ("parameter", "let_declaration", "for_expression"):
            pattern = node.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                out.append(node_text(pattern))
        elif node.type == "closure_parameters":
            out += [node_text(c) for c in node.children if c.type == "identifier"]
    return list(dict.fromkeys(out))


def value_of(type_name: str) -> str:
    """A value of the named type, the plainest one that compiles."""
    name = type_name.strip()
    if name in INTEGERS:
        return "0"
    simple = {"f32": "0.0", "f64": "0.0", "bool": "false", "char": "'\\0'", "&str": '""', "&'static str": '""'}
    if name in simple:
        return simple[name]
    if name.startswith("&mut "):
        return "&mut Default::default()"
    return "&Default::default()" if name.startswith("&") else "Default::default()"


def char_edits(code: str, edits: list[Edit]) -> str:
    """`code` with each edit made; one overlapping an earlier one is skipped (rustfix's rule)."""
    starts = _line_starts(code)
    spans = []
    for line, column, end_line, end_column, text in edits:
        if not (1 <= line <= end_line <= len(starts)):
            continue
        start, end = starts[line - 1] + column - 1, starts[end_line - 1] + end_column - 1
        if 0 <= start <= end <= len(code):
            spans.append((start, end, text))
    kept, reach = [], -1
    for start, end, text in sorted(set(spans)):
        if start >= reach:
            kept.append((start, end, text))
            reach = max(end, start + 1)  # an insertion claims the character after it too
    for start, end, text in reversed(kept):
        code = code[:start] + text + code[end:]
    return code


def _similar_names(code: str, d: Diagnostic) -> list[str]:
    """The similar names rustc offers for the name under the error, its last offer first."""
    wrong = _at(code, d)
    if not IDENT.fullmatch(wrong):
        return []
    for note in d.notes:
        if "similar name" in note:
            names = [n for n in BACKTICKED.findall(note) if IDENT.fullmatch(n) and n != wrong]
            if names:
                return list(dict.fromkeys(reversed(names)))
    return []


def _nearest_names(code: str, tree: Node, d: Diagnostic, n: int) -> list[str]:
    """Up to `n` names nearest the one rustc did not find, of the fields it lists or the code's own."""
    wrong = _at(code, d)
    if d.code not in UNRESOLVED or not IDENT.fullmatch(wrong):
        return []
    listed = [name for note in d.notes if "available field" in note for name in BACKTICKED.findall(note)]
    pool = listed or sorted({node_text(i) for i in walk(tree) if i.type == "identifier"} - {wrong})
    return difflib.get_close_matches(wrong, pool, n=n, cutoff=0.6)


def _found_type(code: str, tree: Node, d: Diagnostic) -> list[Edit]:
    if d.code != "E0308":
        return []
    said = _said(d, EXPECTED_FOUND)
    returns = next((f.child_by_field_name("return_type") for f in walk(tree) if f.type == "function_item"), None)
    if said is None or returns is None:
        return []
    expected, found = said.groups()
    if _squeezed(node_text(returns)) != _squeezed(expected) or "{" in found or "impl " in found:
        return []
    return [(*_point(code, returns.start_byte), *_point(code, returns.end_byte), found)]


def _literal_of(code: str, d: Diagnostic) -> list[Edit]:
    said = _said(d, EXPECTED)
    wrong = _at(code, d)
    if d.code != "E0308" or said is None or not LITERAL.fullmatch(wrong):
        return []
    value = value_of(said.group(1))
    inner = wrong[1:-1] if wrong.startswith('"') else ""  # `"0"` where a number was meant: the number
    if NUMBER.fullmatch(inner) and value == "0" and "." not in inner:
        value = inner
    elif NUMBER.fullmatch(inner) and value == "0.0":
        value = inner if "." in inner else f"{inner}.0"
    return [_replace(d, value)]


def _of_expected_type(d: Diagnostic, bindings: dict[str, list[str]]) -> list[str]:
    """The bindings of the type rustc expected where a mismatch is (E0308), to put in its place."""
    said = _said(d, EXPECTED)
    return bindings.get(_squeezed(said.group(1)), []) if d.code == "E0308" and said is not None else []


def _make_mutable(code: str, tree: Node, d: Diagnostic) -> list[Edit]:
    said = NOT_MUTABLE.search(d.message)
    if d.code not in ("E0384", "E0596", "E0594") or said is None:
        return []
    name = said.group(1).split(".")[0]
    for n in walk(tree):
        if name == "self" and n.type == "self_parameter" and node_text(n).startswith("&") and "mut" not in node_text(n):
            amp = n.children[0]
            return [(*_point(code, amp.end_byte), *_point(code, amp.end_byte), "mut ")]
        if n.type in ("let_declaration", "parameter") and not any(c.type == "mutable_specifier" for c in n.children):
            pattern = n.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier" and node_text(pattern) == name:
                return [(*_point(code, pattern.start_byte), *_point(code, pattern.start_byte), "mut ")]
    return []


def _imports(code: str, tree: Node, d: Diagnostic) -> list[list[Edit]]:
    """Each `use` line rustc suggests, at the top of the function's body."""
    uses = [u for note in d.notes if "consider importing" in note for u in BACKTICKED.findall(note)
            if u.strip().startswith("use ")]
    body = next((f.child_by_field_name("body") for f in walk(tree) if f.type == "function_item"), None)
    if not uses or body is None:
        return []
    at = _point(code, body.start_byte + 1)
    return [[(*at, *at, f"\n    {use.strip()}")] for use in dict.fromkeys(uses)]


def _said(d: Diagnostic, pattern: re.Pattern) -> re.Match | None:
    """The first match of `pattern` in the diagnostic's label, message or notes."""
    return next((m for text in (d.label or "", d.message, *d.notes) for m in pattern.finditer(text)), None)


def _at(code: str, d: Diagnostic) -> str:
    """The code under the diagnostic's primary span."""
    if d.line is None or d.end_line is None:
        return ""
    starts = _line_starts(code)
    if not (1 <= d.line <= d.end_line <= len(starts)):
        return ""
    return code[starts[d.line - 1] + (d.column or 1) - 1:starts[d.end_line - 1] + (d.end_column or 1) - 1]


def _replace(d: Diagnostic, text: str) -> Edit:
    return (d.line, d.column, d.end_line, d.end_column, text)


def _line_starts(code: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(code):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _point(code: str, byte: int) -> tuple[int, int]:
    """(line, column in characters) of a byte offset of `code`."""
    before = code.encode()[:byte].decode(errors="replace")
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _squeezed(text: str) -> str:
    return "".join(text.split())
