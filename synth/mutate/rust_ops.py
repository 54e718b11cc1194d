"""Mutation operators on Rust syntax trees, each aimed at a distinct compiler error.

An operator looks at one declaration's tree and returns the edits it could make (byte span and
replacement); the caller picks one with a seeded generator. Every edit keeps the code parseable:
these are type, borrow and name errors, never typos in the grammar.
"""
from __future__ import annotations

from functools import lru_cache

from tree_sitter import Node, Tree

from synth.extract.rust_syntax import rust_parser

from .operator import Edit, Operator


OWNED_TYPES = ("String", "Vec", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "Box", "VecDeque")
WRONG_METHOD = {"len": "length", "push": "push_back", "is_empty": "empty", "to_string": "to_str", "iter": "iterate",
                "contains": "has", "insert": "add", "get": "at", "chars": "characters", "sum": "total",
                "collect": "collect_all", "map": "apply", "filter": "select", "trim": "strip", "sqrt": "square_root",
                "abs": "absolute", "split_whitespace": "split_words", "entry": "entry_for", "unwrap_or": "or_else_value"}


@lru_cache(maxsize=32)  # each operator walks the same declaration's tree: once, not once each
def _walk(node: Node) -> tuple[Node, ...]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return tuple(out)


def _text(node: Node) -> str:
    return node.text.decode()


def _function(root: Node) -> Node | None:
    for n in root.named_children:
        if n.type == "function_item":
            return n
    return None


def _function_with_body(root: Node) -> tuple[Node, Node] | tuple[None, None]:
    fn = _function(root)
    body = fn.child_by_field_name("body") if fn is not None else None
    return (fn, body) if body is not None else (None, None)


def _bound_names(fn: Node) -> set[str]:
    names = set()
    for n in _walk(fn):
        if n.type == "parameter":
            pattern = n.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                names.add(_text(pattern))
        elif n.type == "let_declaration":
            pattern = n.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                names.add(_text(pattern))
    return names


def _misspell(name: str, taken: set[str]) -> str:
    for candidate in (name[:-1], name + "s", name + "_value", name + "_"):
        if len(candidate) > 1 and candidate not in taken and candidate != name:
            return candidate
    return name + "_undefined"


def unresolved_name(root: Node, src: bytes) -> list[Edit]:
    fn, body = _function_with_body(root)
    if fn is None:
        return []
    bound = _bound_names(fn)
    edits = []
    for n in _walk(body):
        if n.type == "identifier" and _text(n) in bound and n.parent is not None and \
                n.parent.type not in ("let_declaration", "parameter", "closure_parameters", "field_initializer") and \
                n.parent.child_by_field_name("pattern") != n:
            edits.append(Edit(n.start_byte, n.end_byte, _misspell(_text(n), bound)))
    return edits


def return_type_mismatch(root: Node, src: bytes) -> list[Edit]:
    fn = _function(root)
    ret = fn.child_by_field_name("return_type") if fn is not None else None
    if ret is None or _text(ret) in ("Self", "!") or (len(_text(ret)) == 1 and _text(ret).isupper()):
        return []
    return [Edit(ret.start_byte, ret.end_byte, "i32" if _text(ret) == "bool" else "bool")]


def argument_count(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "call_expression":
            args = n.child_by_field_name("arguments")
            named = [a for a in args.named_children if a.type not in ("line_comment", "block_comment")] if args else []
            if named:
                last = named[-1]
                start = named[-2].end_byte if len(named) > 1 else last.start_byte
                edits.append(Edit(start, last.end_byte, ""))
    return edits


def use_after_move(root: Node, src: bytes) -> list[Edit]:
    fn, body = _function_with_body(root)
    if fn is None:
        return []
    edits = []
    for n in _walk(fn.child_by_field_name("parameters")):
        if n.type == "parameter":
            pattern, typ = n.child_by_field_name("pattern"), n.child_by_field_name("type")
            if pattern is not None and pattern.type == "identifier" and typ is not None and \
                    _text(typ).startswith(OWNED_TYPES):
                edits.append(Edit(body.start_byte + 1, body.start_byte + 1,
                                  f"\n    let moved_away = {_text(pattern)};"))
        elif n.type == "self_parameter" and _text(n) == "self":
            edits.append(Edit(body.start_byte + 1, body.start_byte + 1, "\n        let moved_away = self;"))
    return edits


def immutable_binding(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type in ("let_declaration", "self_parameter", "reference_type") or (
                n.type == "parameter" and any(c.type == "mutable_specifier" for c in n.children)):
            for c in n.children:
                if c.type == "mutable_specifier":
                    end = c.end_byte + (1 if src[c.end_byte:c.end_byte + 1] == b" " else 0)
                    if n.type != "reference_type" or (n.parent is not None and n.parent.type == "self_parameter"):
                        edits.append(Edit(c.start_byte, end, ""))
    return edits


def conflicting_borrow(root: Node, src: bytes) -> list[Edit]:
    fn, body = _function_with_body(root)
    if fn is None:
        return []
    statements = [c for c in body.named_children if c.type not in ("line_comment", "block_comment")]
    edits = []
    for stmt in statements[:-1]:
        pattern = stmt.child_by_field_name("pattern") if stmt.type == "let_declaration" else None
        if pattern is not None and pattern.type == "identifier" and any(
                c.type == "mutable_specifier" for c in stmt.children):
            name = _text(pattern)
            last = statements[-1]
            # Borrow right after the binding, use the borrow just before the block's last statement.
            edits.append(Edit(stmt.end_byte, last.start_byte,
                              f"\n    let held = &{name};" + src[stmt.end_byte:last.start_byte].decode()
                              + "let _still_held = held;\n    "))
    return edits


def missing_method(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "call_expression":
            function = n.child_by_field_name("function")
            if function is not None and function.type == "field_expression":
                field = function.child_by_field_name("field")
                if field is not None:
                    name = _text(field)
                    edits.append(Edit(field.start_byte, field.end_byte, WRONG_METHOD.get(name, name + "_all")))
    return edits


def missing_field(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "field_expression" and not (n.parent is not None and n.parent.type == "call_expression"
                                                 and n.parent.child_by_field_name("function") == n):
            field = n.child_by_field_name("field")
            if field is not None and field.type == "field_identifier":
                edits.append(Edit(field.start_byte, field.end_byte, _text(field) + "s"))
        elif n.type == "field_initializer":
            field = n.child_by_field_name("field")
            if field is not None and field.type == "field_identifier":
                edits.append(Edit(field.start_byte, field.end_byte, _text(field) + "s"))
    return edits


def dropped_try(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "try_expression" and n.children and n.children[-1].type == "?":
            q = n.children[-1]
            edits.append(Edit(q.start_byte, q.end_byte, ""))
        elif n.type == "call_expression":
            function = n.child_by_field_name("function")
            if function is not None and function.type == "field_expression":
                field = function.child_by_field_name("field")
                if field is not None and _text(field) in ("unwrap", "expect") and n.child_by_field_name("arguments"):
                    value = function.child_by_field_name("value")
                    edits.append(Edit(value.end_byte, n.end_byte, ""))
    return edits


def missing_trait_method(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in root.named_children:
        if n.type == "impl_item" and n.child_by_field_name("trait") is not None:
            body = n.child_by_field_name("body")
            members = [m for m in body.named_children if m.type == "function_item"] if body else []
            for m in members:
                start = m.start_byte
                prev = m.prev_sibling  # take the method's doc comments and attributes along
                while prev is not None and prev.type in ("line_comment", "attribute_item") and prev.start_byte > body.start_byte:
                    start = prev.start_byte
                    prev = prev.prev_sibling
                edits.append(Edit(start, m.end_byte, ""))
    return edits


def dropped_bound(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "trait_bounds":
            bounds = n.named_children
            if len(bounds) >= 2:
                for i, b in enumerate(bounds):
                    # remove `B + ` (or ` + B` for the last one)
                    if i + 1 < len(bounds):
                        edits.append(Edit(b.start_byte, bounds[i + 1].start_byte, ""))
                    else:
                        edits.append(Edit(bounds[i - 1].end_byte, b.end_byte, ""))
            elif len(bounds) == 1 and n.parent is not None and n.parent.type in ("type_parameter",
                                                                                 "constrained_type_parameter"):
                name = n.parent.child_by_field_name("name") or n.parent.child_by_field_name("left")
                if name is not None:  # `T: Clone` -> `T`
                    edits.append(Edit(name.end_byte, n.end_byte, ""))
    return edits


def argument_type(root: Node, src: bytes) -> list[Edit]:
    edits = []
    for n in _walk(root):
        if n.type == "arguments" and n.parent is not None and n.parent.type == "call_expression":
            for a in n.named_children:
                if a.type in ("integer_literal", "float_literal"):
                    edits.append(Edit(a.start_byte, a.end_byte, f'"{_text(a)}"'))
                elif a.type == "string_literal":
                    edits.append(Edit(a.start_byte, a.end_byte, "0"))
    return edits


RUST_OPERATORS = [
    Operator("unresolved_name", "E0425", unresolved_name),
    Operator("return_type_mismatch", "E0308", return_type_mismatch),
    Operator("argument_count", "E0061", argument_count),
    Operator("use_after_move", "E0382", use_after_move),
    Operator("immutable_binding", "E0384/E0596", immutable_binding),
    Operator("conflicting_borrow", "E0502/E0499/E0506", conflicting_borrow),
    Operator("missing_method", "E0599", missing_method),
    Operator("missing_field", "E0609/E0560", missing_field),
    Operator("dropped_try", "E0308/E0277/E0599", dropped_try),
    Operator("missing_trait_method", "E0046", missing_trait_method),
    Operator("dropped_bound", "E0369/E0277/E0599", dropped_bound),
    Operator("argument_type", "E0308", argument_type),
]


def apply(text: str, edit: Edit) -> str:
    data = text.encode()
    return (data[:edit.start] + edit.replacement.encode() + data[edit.end:]).decode()


@lru_cache(maxsize=8)  # every operator looks at the same declaration in turn: one parse, not one each
def _tree(data: bytes) -> Tree:
    return rust_parser().parse(data)


def rust_sites(text: str, operator: Operator) -> list[Edit]:
    """Edits `operator` could make to `text`; only those that leave it parseable."""
    data = text.encode()
    root = _tree(data).root_node
    if root.has_error:
        return []
    out = []
    for edit in operator.sites(root, data):
        mutated = apply(text, edit)
        if mutated != text and not _reparsed(data, edit, mutated.encode()).root_node.has_error:
            out.append(edit)
    return out


def _reparsed(data: bytes, edit: Edit, mutated: bytes) -> Tree:
    """`mutated` (= `data` with `edit`) parsed again from `data`'s tree, reusing what the edit left alone."""
    tree = _tree(data).copy()
    new_end = edit.start + len(edit.replacement.encode())
    tree.edit(start_byte=edit.start, old_end_byte=edit.end, new_end_byte=new_end, start_point=_point(data, edit.start),
              old_end_point=_point(data, edit.end), new_end_point=_point(mutated, new_end))
    return rust_parser().parse(mutated, tree)


def _point(data: bytes, at: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, at) + 1
    return data.count(b"\n", 0, at), at - line_start
