"""Rust answers that only pretend, read from their syntax tree (tree-sitter): a function or method
whose body never does its job, or an attribute the answer adds to hide what the compiler would say.

A body pretends when, in its straight-line code (plain and `unsafe` blocks at any nesting, not
inside a branch), it diverges (`loop {}` with no `break`, `panic!`, `unreachable!`, `todo!`,
`unimplemented!`), whatever statements come before, or when all it does, besides statements
that do nothing (`let _ = 0;`, `;`, a bare literal), is call itself; and anywhere, a `todo!` or
`unimplemented!` (for a repair also a `panic!` or `unreachable!`) the reference does not have. Real code does both now and
then (a function that ends in `unreachable!()` after its loop): a function whose reference
diverges too may, but a reference that does real work before diverging does not license a body
that does nothing else. Own attributes: `#[allow(..)]`, `#[expect(..)]`, `#[cfg(..)]`,
`#[cfg_attr(..)]` (outer or inner) that the reference does not have."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tree_sitter import Node

from synth.rust_syntax import node_text as _text, rust_parser, walk as _walk

DIVERGING_MACROS = frozenset({"panic", "unreachable", "todo", "unimplemented"})
HIDING_ATTRIBUTES = frozenset({"allow", "expect", "cfg", "cfg_attr"})
PLAIN_BLOCKS = ("block", "unsafe_block")
NO_OP_VALUES = ("integer_literal", "float_literal", "string_literal", "boolean_literal", "char_literal",
                "identifier", "unit_expression", "tuple_expression")


@dataclass(frozen=True)
class Body:
    """What one function's body does, as far as pretending goes."""
    name: str
    diverges: bool  # its straight-line code never completes
    only_diverges: bool  # ... and does nothing else first
    only_calls_itself: bool


@dataclass(frozen=True)
class Reading:
    """What pretending looks at in one piece of code, from one parse and one walk of its tree."""
    attributes: Counter  # its lint and configuration attributes, whitespace squeezed: `#[allow(dead_code)]`
    macros: Counter  # the diverging macros it calls, wherever they are, by name
    bodies: list[Body]  # every function or method it defines with a body (in impls, traits and bodies too)


def read(code: str) -> Reading:
    attributes, macros, bodies = Counter(), Counter(), []
    for node in _walk(rust_parser().parse(code.encode()).root_node):
        if node.type in ("attribute_item", "inner_attribute_item"):
            attribute = next((c for c in node.named_children if c.type == "attribute"), None)
            head = attribute.named_children[0] if attribute is not None and attribute.named_children else None
            if head is not None and _text(head) in HIDING_ATTRIBUTES:
                attributes["".join(_text(node).split())] += 1
        elif node.type == "macro_invocation":
            name = _text(node.child_by_field_name("macro")).split("::")[-1]
            if name in DIVERGING_MACROS:
                macros[name] += 1
        elif node.type == "function_item" and (body := node.child_by_field_name("body")) is not None:
            name = _text(node.child_by_field_name("name"))
            work = _effective(body)
            bodies.append(Body(name, _block_diverges(body), bool(work) and _diverges(work[0]),
                               len(work) == 1 and _calls(work[0], name)))
    return Reading(attributes, macros, bodies)


def pretending(code: str, reference: str, repair: bool = False) -> str:
    """Why a Rust answer only pretends ('' when it does not): its first hollow function, an
    attribute of its own that hides code or lints, a `todo!`/`unimplemented!` the reference does
    not have (anywhere: a match arm `_ => todo!()` compiles too), and for a repair, a `panic!` or
    `unreachable!` the original does not have (the case it handled, given up)."""
    mine, original = read(code), read(reference)
    own = mine.attributes - original.attributes
    if own:
        return f"adds {sorted(own)[0]} of its own"
    added = mine.macros - original.macros
    unwritten = sorted(m for m in added if m in ("todo", "unimplemented") or repair)
    if unwritten:
        return f"adds {unwritten[0]}!() where the original has none"
    allowed = {b.name: b for b in original.bodies}
    for body in mine.bodies:
        theirs = allowed.get(body.name)
        if body.only_calls_itself and not (theirs and theirs.only_calls_itself):
            return f"fn {body.name} only calls itself"
        if body.diverges and not (theirs and theirs.diverges and (theirs.only_diverges or not body.only_diverges)):
            return f"fn {body.name} only diverges (panics, loops or is not written)"
    return ""


def _effective(block: Node) -> list[Node]:
    """The block's statements that do something, plain blocks opened up."""
    out = []
    for statement in block.named_children:
        inner = _unwrapped(statement)
        if inner.type in PLAIN_BLOCKS:
            out.extend(_effective(inner))
        elif not _no_op(statement):
            out.append(inner)
    return out


def _unwrapped(statement: Node) -> Node:
    if statement.type == "expression_statement" and statement.named_children:
        return statement.named_children[0]
    return statement


def _no_op(statement: Node) -> bool:
    if statement.type in ("empty_statement", "line_comment", "block_comment"):
        return True
    if statement.type == "let_declaration":
        pattern, value = statement.child_by_field_name("pattern"), statement.child_by_field_name("value")
        return pattern is not None and _text(pattern) == "_" and (value is None or value.type in NO_OP_VALUES)
    return _unwrapped(statement).type in NO_OP_VALUES


def _block_diverges(block: Node) -> bool:
    return any(_diverges(s) for s in block.named_children)


def _diverges(statement: Node) -> bool:
    """The statement never completes, whatever its branches would do (none is looked into)."""
    node = _unwrapped(statement)
    if node.type in PLAIN_BLOCKS:
        inner = node if node.type == "block" else next((c for c in node.named_children if c.type == "block"), None)
        return inner is not None and _block_diverges(inner)
    if node.type == "macro_invocation":
        return _text(node.child_by_field_name("macro")).split("::")[-1] in DIVERGING_MACROS
    if node.type == "loop_expression":
        return not any(n.type == "break_expression" for n in _walk(node))
    if node.type in ("let_declaration", "return_expression"):
        value = node.child_by_field_name("value") if node.type == "let_declaration" else \
            (node.named_children[0] if node.named_children else None)
        return value is not None and _diverges(value)
    return False


def _calls(node: Node, name: str) -> bool:
    """A call of the function itself: `name(..)`, `Self::name(..)`, `self.name(..)`, `Type::name(..)`."""
    if node.type == "return_expression" and node.named_children:
        node = node.named_children[0]
    if node.type != "call_expression":
        return False
    callee = node.child_by_field_name("function")
    last = callee.child_by_field_name("field" if callee.type == "field_expression" else "name") \
        if callee.type in ("field_expression", "scoped_identifier") else callee
    if callee.type == "field_expression" and _text(callee.child_by_field_name("value")) != "self":
        return False
    return last is not None and _text(last) == name
