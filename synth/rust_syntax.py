"""tree-sitter's Rust grammar, loaded once: the parser every Rust module of synth uses (extraction,
mutation, the judge), and the small walks over its trees they share."""
from __future__ import annotations

import functools
import re

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

UNUSED = re.compile(r"_\w*")  # a binding nothing reads: `let _ = 0;`, `let _x = 0;`
NO_OP_VALUES = ("integer_literal", "float_literal", "string_literal", "boolean_literal", "char_literal",
                "identifier", "unit_expression", "tuple_expression")


@functools.cache
def rust_language() -> Language:
    return Language(tree_sitter_rust.language())


@functools.cache
def rust_parser() -> Parser:
    return Parser(rust_language())


def field_text(node: Node, name: str) -> str:
    child = node.child_by_field_name(name)
    return child.text.decode() if child is not None else ""


def walk(node: Node):
    """Every node under `node` (itself first), in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def node_text(node: Node | None) -> str:
    return node.text.decode() if node is not None else ""


def unwrapped(statement: Node) -> Node:
    """An expression statement's expression (any other statement as it is)."""
    if statement.type == "expression_statement" and statement.named_children:
        return statement.named_children[0]
    return statement


def does_nothing(statement: Node) -> bool:
    """A statement that does nothing: `;`, a comment, `let _ = 0;`, a bare literal or name."""
    if statement.type in ("empty_statement", "line_comment", "block_comment"):
        return True
    if statement.type == "let_declaration":
        pattern, value = statement.child_by_field_name("pattern"), statement.child_by_field_name("value")
        return pattern is not None and UNUSED.fullmatch(node_text(pattern)) is not None and \
            (value is None or value.type in NO_OP_VALUES)
    return unwrapped(statement).type in NO_OP_VALUES


def use_paths(tree: Node | None, prefix: str = "") -> list[tuple[str, str]]:
    """(the name it brings in, its full path) for each path a `use` tree names, spaces squeezed:
    `std::process::{abort, exit as quit}` -> ("abort", "std::process::abort"), ("quit", "std::process::exit")."""
    if tree is None:
        return []
    squeeze = lambda node: "".join(node_text(node).split())  # noqa: E731
    if tree.type in ("identifier", "scoped_identifier"):
        return [(squeeze(tree).split("::")[-1], prefix + squeeze(tree))]
    if tree.type == "use_as_clause":
        return [(node_text(tree.child_by_field_name("alias")), prefix + squeeze(tree.child_by_field_name("path")))]
    if tree.type == "scoped_use_list":
        base = tree.child_by_field_name("path")
        return use_paths(tree.child_by_field_name("list"), prefix + (squeeze(base) + "::" if base is not None else ""))
    if tree.type == "use_list":
        return [pair for child in tree.named_children for pair in use_paths(child, prefix)]
    return []
