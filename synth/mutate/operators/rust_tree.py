"""What the Rust mutation operators read in a declaration's tree: its nodes, the names in scope at
a place, the types it uses. Queries only, no edits: rust.py holds the operators (and stays
under the modules' size limit, benchmarks/shape.py)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from tree_sitter import Node

if TYPE_CHECKING:
    from synth.mutate.operator import Edit


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


def _bindings(fn: Node) -> list[Node]:
    """The identifiers a parameter or a `let` binds in `fn`, in source order."""
    out = []
    for n in _walk(fn):
        if n.type in ("parameter", "let_declaration"):
            pattern = n.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                out.append(pattern)
    return out


def _bound_names(fn: Node) -> set[str]:
    return {_text(n) for n in _bindings(fn)}


# Below these a type node names a trait or declares a generic: no type a value could have.
NOT_A_VALUE_TYPE = ("trait_bounds", "abstract_type", "dynamic_type", "where_clause", "type_parameters", "type_binding")
# Items a body may declare: their types and generics are out of scope at the signature (semver's
# `deserialize` holds `impl<'de> Visitor<'de> for VersionVisitor` and its methods' `Self::Value`).
NESTED_ITEMS = ("function_item", "impl_item", "struct_item", "enum_item", "union_item", "trait_item", "mod_item",
                "type_item")
VALUE_TYPES = ("primitive_type", "type_identifier", "scoped_type_identifier", "generic_type")


def _types_used_besides(fn: Node, ret: Node) -> list[str]:
    """The short types `fn` names outside its return type (parameters, `let` annotations,
    generic arguments), sorted: none that holds the return type, `Self`, `str` (unsized) or a
    generic of `fn`."""
    params = fn.child_by_field_name("type_parameters")
    generics = {_text(n) for n in _walk(params) if n.type == "type_identifier"} if params else set()
    local = {_text(n.child_by_field_name("name")) for n in _walk(fn) if n != fn and n.type in NESTED_ITEMS
             and n.child_by_field_name("name") is not None}  # a body's own `struct Visitor;`
    found = set()
    for n in _walk(fn):
        t = _text(n)
        if n.type in VALUE_TYPES and not ret.start_byte <= n.start_byte < ret.end_byte and len(t) <= 25 \
                and t not in ("Self", "str") and t not in generics | local and _text(ret) not in t and "'" not in t \
                and not _type_name_part(n) and not _below(n, fn, NOT_A_VALUE_TYPE + NESTED_ITEMS):
            found.add(t)
    return sorted(found)


def _type_name_part(n: Node) -> bool:
    """`HashMap` of `HashMap<K, V>`, `Result` of `io::Result`: a part of a type, no type itself."""
    p = n.parent
    return p is not None and (p.type == "scoped_type_identifier" or (
        p.type == "generic_type" and n == p.child_by_field_name("type")))


def _below(n: Node, top: Node, types: tuple[str, ...]) -> bool:
    p = n.parent
    while p is not None and p != top:
        if p.type in types:
            return True
        p = p.parent
    return False


def _call_arguments(root: Node) -> list[Node]:
    """The arguments of every function and method call under `root`."""
    return [a for n in _walk(root) if n.type == "arguments" and n.parent is not None
            and n.parent.type == "call_expression" for a in n.named_children]


# `x` (a binding, maybe `ref`/`mut`, maybe `x @ _`) or `_`: an arm that matches whatever is left
CATCH_ALL = re.compile(r"(ref\s+)?(mut\s+)?[a-z_][A-Za-z0-9_]*(\s*@\s*_)?")


def _catch_all(arm: Node) -> bool:
    pattern = arm.child_by_field_name("pattern")
    return pattern.child_by_field_name("condition") is None and CATCH_ALL.fullmatch(_text(pattern)) is not None


def _removable_arms(block: Node) -> list[Node]:
    """The arms of a `match_block` that leave it non-exhaustive when gone: none while a catch-all
    stays, no guarded one (a guard never counted towards exhaustiveness)."""
    arms = [a for a in block.named_children if a.type == "match_arm"]
    if len(arms) < 2 or any(_catch_all(a) for a in arms):
        return []
    return [a for a in arms if a.child_by_field_name("pattern").child_by_field_name("condition") is None]


def _last_type_argument(generic: Node) -> tuple[Node, Node] | None:
    """(`K`, `V`) of `HashMap<K, V>`: the last of two or more type arguments and what precedes it,
    unless that is no type (`Item = T`) or the type an alias of one argument (`io::Result`)."""
    name, args = generic.child_by_field_name("type"), generic.child_by_field_name("type_arguments")
    if name is None or args is None or (name.type == "scoped_type_identifier" and _text(name).endswith("::Result")
                                        and not _text(name).endswith("result::Result")):
        return None
    types = [a for a in args.named_children
             if a.type not in ("lifetime", "type_binding", "line_comment", "block_comment")]
    return (args.named_children[-2], types[-1]) if len(types) >= 2 and types[-1] == args.named_children[-1] else None


def _elision_ambiguous(fn: Node) -> bool:
    """Whether an elided lifetime in `fn`'s result would be an error (E0106): two borrowed
    parameters, and no `&self` whose lifetime elision would pick."""
    params = fn.child_by_field_name("parameters")
    if params is None or any(p.type == "self_parameter" and "&" in _text(p) for p in params.named_children):
        return False
    return sum(p.type == "parameter" and any(t.type == "reference_type" for t in _walk(p.child_by_field_name("type")))
               for p in params.named_children) >= 2


CLONES = ("clone", "to_owned", "to_vec")


def _cloned_binding(call: Node) -> Node | None:
    """`x` of `x.clone()` (or `.to_owned()`, `.to_vec()`) passed to a call or bound by a `let`:
    without the copy, `x` moves there."""
    function = call.child_by_field_name("function") if call.type == "call_expression" else None
    if function is None or function.type != "field_expression" or call.parent is None:
        return None
    value, field = function.child_by_field_name("value"), function.child_by_field_name("field")
    args = call.child_by_field_name("arguments")
    moved_into = call.parent.type == "arguments" or (call.parent.type == "let_declaration"
                                                     and call.parent.child_by_field_name("value") == call)
    if value is not None and value.type == "identifier" and field is not None and _text(field) in CLONES \
            and args is not None and not args.named_children and moved_into:
        return value
    return None


def _in_scope(binding: Node, at: Node) -> bool:
    """Whether the name `binding` binds (a parameter, or a `let` ended before `at` in a block that
    holds `at`) can be used at `at`."""
    decl = binding.parent
    if decl.type == "parameter":
        return True
    block = decl.parent
    return decl.end_byte <= at.start_byte and block is not None and block.start_byte <= at.start_byte < block.end_byte


def _apart(a: Edit, b: Edit) -> bool:
    """Something stands between the edits: `&v` -> `vs` would be one error, made of two that touch."""
    lo, hi = sorted((a, b), key=lambda e: e.start)
    return lo.end < hi.start
