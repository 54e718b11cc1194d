"""tree-sitter's Rust grammar, loaded once: the parser every Rust module of synth uses (extraction,
mutation, the judge), and the small walks over its trees they share."""
from __future__ import annotations

import functools

import tree_sitter_rust
from tree_sitter import Language, Node, Parser


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
