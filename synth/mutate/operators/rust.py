"""Mutation operators on Rust syntax trees, each aimed at a distinct compiler error.

An operator looks at one declaration's tree and returns the edits it could make (byte span and
replacement); the caller picks one with a seeded generator. Every edit keeps the code parseable:
these are type, borrow and name errors, never typos in the grammar.
"""
from __future__ import annotations

from functools import lru_cache

from tree_sitter import Node, Tree

from synth.rust_syntax import rust_parser

from synth.mutate.operator import Edit, Operator
from synth.mutate.operators.rust_tree import (_apart, _bindings, _bound_names, _call_arguments, _cloned_binding, _elision_ambiguous,
                        _function, _function_with_body, _in_scope, _last_type_argument, _removable_arms, _text,
                        _types_used_besides, _walk)


OWNED_TYPES = ("String", "Vec", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "Box", "VecDeque")
WRONG_METHOD = {"len": "length", "push": "push_back", "is_empty": "empty", "to_string": "to_str", "iter": "iterate",
                "contains": "has", "insert": "add", "get": "at", "chars": "characters", "sum": "total",
                "collect": "collect_all", "map": "apply", "filter": "select", "trim": "strip", "sqrt": "square_root",
                "abs": "absolute", "split_whitespace": "split_words", "entry": "entry_for", "unwrap_or": "or_else_value"}


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
    # A type the declaration uses elsewhere is a plausible slip, and the diagnostic's "expected X,
    # found Y" then names two types of the code, not an obvious stranger like `bool`.
    wrong = _types_used_besides(fn, ret) or ["i32" if _text(ret) == "bool" else "bool"]
    return [Edit(ret.start_byte, ret.end_byte, t) for t in wrong]


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
    for a in _call_arguments(root):
        if a.type in ("integer_literal", "float_literal"):
            edits.append(Edit(a.start_byte, a.end_byte, f'"{_text(a)}"'))
        elif a.type == "string_literal":
            edits.append(Edit(a.start_byte, a.end_byte, "0"))
    return edits


def removed_match_arm(root: Node, src: bytes) -> list[Edit]:
    """A match less one arm (E0004): rustc names the pattern missing, not what its arm did."""
    edits = []
    for n in _walk(root):
        for arm in _removable_arms(n) if n.type == "match_block" else ():
            if arm.next_named_sibling is not None:  # the arm, its comma and the space up to what follows
                edits.append(Edit(arm.start_byte, arm.next_sibling.start_byte, ""))
            else:  # the last one and the space before it: the closing brace keeps its line
                edits.append(Edit(arm.prev_sibling.end_byte, arm.end_byte, ""))
    return edits


def generic_argument_count(root: Node, src: bytes) -> list[Edit]:
    """`HashMap<K, V>` -> `HashMap<K>` (E0107): which argument went missing is in the code only."""
    return [Edit(prev.end_byte, last.end_byte, "") for prev, last in
            filter(None, (_last_type_argument(n) for n in _walk(root) if n.type == "generic_type"))]


def missing_lifetime(root: Node, src: bytes) -> list[Edit]:
    """`fn f<'a>(x: &'a str, y: &str) -> &'a str` -> `-> &str` (E0106): rustc cannot tell which
    parameter the result borrows from, and says so; which one it is, the body shows."""
    fn = _function(root)
    ret = fn.child_by_field_name("return_type") if fn is not None else None
    if ret is None or not _elision_ambiguous(fn):
        return []
    lifetimes = [next((c for c in n.children if c.type == "lifetime"), None) for n in _walk(ret)
                 if n.type == "reference_type"]
    return [Edit(lt.start_byte, lt.next_sibling.start_byte, "") for lt in lifetimes if lt is not None]


def dropped_clone(root: Node, src: bytes) -> list[Edit]:
    """`f(x.clone())` -> `f(x)`: a move where a copy was (E0382/E0505 at a later use of `x`, not here)."""
    return [Edit(x.end_byte, n.end_byte, "") for n in _walk(root) if (x := _cloned_binding(n)) is not None]


def argument_from_context(root: Node, src: bytes) -> list[Edit]:
    """`f(a)` -> `f(b)`, `b` a binding in scope there (E0308 where the types differ, not E0425):
    the fix is a name that only the code can tell."""
    fn, body = _function_with_body(root)
    if fn is None:
        return []
    bindings = _bindings(fn)
    edits = []
    for a in _call_arguments(body):
        names = sorted({_text(b) for b in bindings if _in_scope(b, a)} - {_text(a)}) if a.type == "identifier" else []
        if names:  # the next name after it in sorted order: a fixed choice, not always the same one
            edits.append(Edit(a.start_byte, a.end_byte, next((m for m in names if m > _text(a)), names[0])))
    return edits


# The operators two_errors pairs, in its fixed order: those whose edit stays within a few tokens
# (not conflicting_borrow's span of statements, nor a whole method of missing_trait_method).
PAIRED = (dropped_clone, argument_from_context, removed_match_arm, generic_argument_count,
          missing_lifetime, unresolved_name, missing_method, missing_field, argument_type, dropped_try,
          immutable_binding, return_type_mismatch, argument_count, dropped_bound, use_after_move)
TWO_ERRORS_SITES = 4


def two_errors(root: Node, src: bytes) -> list[Edit]:
    """Two edits of two operators at once, as one edit over the span between them: a fix must
    answer both errors, and rustc may report only one of them (a type error can hide a borrow's)."""
    applicable = [sites for sites in (op(root, src) for op in PAIRED) if sites]
    edits = []
    for sites, later in zip(applicable, applicable[1:]):  # each operator's first site, with the next operator's
        b = next((e for e in later if _apart(sites[0], e)), None)
        if b is not None:
            lo, hi = sorted((sites[0], b), key=lambda e: e.start)
            edits.append(Edit(lo.start, hi.end, lo.replacement + src[lo.end:hi.start].decode() + hi.replacement))
    return edits[:TWO_ERRORS_SITES]


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
    Operator("removed_match_arm", "E0004", removed_match_arm),
    Operator("generic_argument_count", "E0107", generic_argument_count),
    Operator("missing_lifetime", "E0106", missing_lifetime),
    Operator("dropped_clone", "E0382/E0505", dropped_clone),
    Operator("argument_from_context", "E0308", argument_from_context),
    Operator("two_errors", "two of the above", two_errors),
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
