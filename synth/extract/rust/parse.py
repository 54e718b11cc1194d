"""Rust declarations with tree-sitter-rust: items, methods with their impl, docs and attributes,
signature, body, and the facts the context builder needs (which names each item uses)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from tree_sitter import Node, Query, QueryCursor

from synth.extract.clean import is_metadata_line
from synth.extract.rust.item import RustItem
from synth.rust_syntax import field_text, rust_language, rust_parser

ITEM_KINDS = {
    "function_item": "fn", "struct_item": "struct", "enum_item": "enum", "trait_item": "trait",
    "impl_item": "impl", "const_item": "const", "static_item": "static", "type_item": "type",
    "macro_definition": "macro", "union_item": "union",
}
NEAR_ERROR_LINES = 2
# Identifiers come from the source text with comments and literals blanked out: a regex over
# bytes is ~10x faster than one tree-sitter node per identifier (keywords come along; harmless).
MASK_QUERY = """
(line_comment) @m
(block_comment) @m
(string_literal) @m
(raw_string_literal) @m
(char_literal) @m
"""
WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@functools.cache
def _mask_query() -> Query:
    return Query(rust_language(), MASK_QUERY)


class IdentifierTable:
    """The words of a file with comments and literals blanked out, queried by byte range."""

    def __init__(self, root: Node, data: bytes):
        masked = bytearray(data)
        for node in QueryCursor(_mask_query()).captures(root).get("m", []):
            masked[node.start_byte:node.end_byte] = b" " * (node.end_byte - node.start_byte)
        self.masked = bytes(masked)

    def within(self, start: int, end: int, hole: tuple[int, int] | None = None) -> set[str]:
        if hole is None:
            words = set(WORD.findall(self.masked, start, end))
        else:
            words = set(WORD.findall(self.masked, start, hole[0])) | set(WORD.findall(self.masked, hole[1], end))
        return {w.decode() for w in words}


@dataclass
class RustFile:
    items: list[RustItem]
    use_lines: list[str]  # file-level `use` declarations
    has_error: bool
    dropped_broken: int  # items that contained a parse error


def module_path_for(rel_in_crate: str | None, fallback: str) -> str:
    """`src/lib.rs` -> crate, `src/a/b.rs` and `src/a/b/mod.rs` -> crate::a::b."""
    if rel_in_crate is None:
        return PurePosixPath(fallback).stem
    parts = list(PurePosixPath(rel_in_crate).with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return "::".join(["crate", *parts])


def _is_doc_comment(node: Node) -> bool:
    if node.type == "line_comment":
        return any(c.type == "outer_doc_comment_marker" for c in node.children)
    if node.type == "block_comment":
        return node.text.startswith(b"/**")
    return False


def _leading(node: Node) -> list[Node]:
    """Outer docs and attributes before an item belong to it; so do metadata comments touching
    that block (an `// ANCHOR:` line), but not a frontmatter block separated by a blank line."""
    out = []
    prev, top_row = node.prev_sibling, node.start_point.row
    while prev is not None:
        adjacent = prev.end_point.row >= top_row - 1
        if prev.type == "attribute_item" or _is_doc_comment(prev) or (
                adjacent and prev.type == "line_comment" and is_metadata_line(prev.text.decode(errors="replace"))):
            out.append(prev)
            top_row = prev.start_point.row
            prev = prev.prev_sibling
        else:
            break
    return list(reversed(out))


def _doc_text(nodes: list[Node]) -> str:
    lines = []
    for n in nodes:
        if _is_doc_comment(n):
            raw = n.text.decode(errors="replace")
            if raw.startswith("///"):
                lines.append(raw[3:].rstrip("\n").removeprefix(" "))
            else:
                lines.append(raw.removeprefix("/**").removesuffix("*/").strip())
    return "\n".join(lines)


def _is_test_attr(text: str) -> bool:
    compact = text.replace(" ", "")
    return compact in ("#[test]", "#[cfg(test)]") or compact.startswith("#[tokio::test") or "cfg(test)" in compact


def _stub(kind: str, item: Node, data: bytes, attributes: list[str], doc: str) -> str:
    """What this item looks like as context: bodies become `todo!()`, types stay whole, docs kept."""
    text = data[item.start_byte:item.end_byte].decode()
    docs = "".join(f"/// {line}".rstrip() + "\n" for line in doc.splitlines()) if doc else ""
    attrs = docs + "".join(a + "\n" for a in attributes if not _is_test_attr(a))
    if kind in ("fn", "method"):
        body = item.child_by_field_name("body")
        if body is None:
            return attrs + text
        return attrs + data[item.start_byte:body.start_byte].decode().rstrip() + " {\n    todo!()\n}"
    if kind == "trait":
        return attrs + _stub_trait(item, data)
    return attrs + text


def _stub_trait(item: Node, data: bytes) -> str:
    body = item.child_by_field_name("body")
    if body is None:
        return data[item.start_byte:item.end_byte].decode()
    out = [data[item.start_byte:body.start_byte].decode().rstrip() + " {"]
    for child in body.named_children:
        if child.type == "function_item":
            fbody = child.child_by_field_name("body")
            out.append("    " + data[child.start_byte:fbody.start_byte].decode().rstrip() + " { todo!() }")
        elif child.type in ("function_signature_item", "associated_type", "const_item"):
            out.append("    " + child.text.decode())
    out.append("}")
    return "\n".join(out)


def _error_lines(root: Node) -> list[int]:
    """Lines of parse errors, and the first line of the top-level item holding each (the cause
    of an error is often above where the parser notices it)."""
    rows = []
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.type == "ERROR" or node.is_missing:
            rows.append(node.start_point.row + 1)
            top = node
            while top.parent is not None and top.parent != root:
                top = top.parent
            rows.append(top.start_point.row + 1)
            continue
        stack.extend(node.children)
    return rows


def parse_rust(data: bytes, module_path: str) -> RustFile:
    tree = rust_parser().parse(data)
    root = tree.root_node
    errors = _error_lines(root) if root.has_error else []
    idents = IdentifierTable(root, data)
    items: list[RustItem] = []
    dropped = 0
    use_lines = [c.text.decode() for c in root.named_children if c.type == "use_declaration"]

    def emit(node: Node, kind: str, module: str, in_test: bool, impl: Node | None = None, trait_of: str | None = None):
        nonlocal dropped
        if node.has_error:
            dropped += 1
            return None
        leading = _leading(node)
        start_node = leading[0] if leading else node
        attributes = [n.text.decode() for n in leading if n.type == "attribute_item"]
        is_test = in_test or any(_is_test_attr(a) for a in attributes)
        if kind == "impl":
            name = field_text(node, "type")
        else:
            name = field_text(node, "name")
        body = node.child_by_field_name("body")
        if kind in ("fn", "method") and body is not None:
            signature = data[node.start_byte:body.start_byte].decode().strip()
        elif kind in ("struct", "enum", "union", "trait", "impl") and body is not None:
            signature = data[node.start_byte:body.start_byte].decode().strip()
        else:
            signature = data[node.start_byte:node.end_byte].decode().strip()
        first, last = start_node.start_point.row + 1, node.end_point.row + 1
        item = RustItem(
            kind=kind, name=name, start_byte=start_node.start_byte, end_byte=node.end_byte,
            start_line=first, end_line=last, item_start=node.start_byte, doc=_doc_text(leading),
            attributes=attributes, signature=signature,
            body=body.text.decode() if (body is not None and kind in ("fn", "method")) else "",
            params=field_text(node, "parameters"), return_type=field_text(node, "return_type"),
            module_path=module, is_test=is_test,
            near_parse_error=any(first - NEAR_ERROR_LINES <= r <= last + NEAR_ERROR_LINES for r in errors),
            uses=idents.within(node.start_byte, node.end_byte), text=data[start_node.start_byte:node.end_byte].decode(),
        )
        if impl is not None:
            item.self_type = field_text(impl, "type")
            item.trait_name = field_text(impl, "trait") or None
            ibody = impl.child_by_field_name("body")
            item.impl_header = data[impl.start_byte:ibody.start_byte].decode().strip()
            item.impl_key = (impl.start_byte, impl.end_byte)
        if trait_of is not None:
            item.trait_name = trait_of
        if kind == "impl":
            item.trait_name = field_text(node, "trait") or None
        item.stub = _stub(kind, node, data, attributes, item.doc)
        hole = (body.start_byte, body.end_byte) if (body is not None and kind in ("fn", "method")) else None
        item.signature_uses = item.uses if hole is None else idents.within(node.start_byte, node.end_byte, hole)
        items.append(item)
        return item

    def walk(container: Node, module: str, in_test: bool):
        for child in container.named_children:
            kind = ITEM_KINDS.get(child.type)
            if child.type == "mod_item":
                body = child.child_by_field_name("body")
                if body is None or child.has_error and not body:
                    continue
                attrs = [n.text.decode() for n in _leading(child) if n.type == "attribute_item"]
                walk(body, f"{module}::{field_text(child, 'name')}", in_test or any(_is_test_attr(a) for a in attrs))
            elif kind in ("impl", "trait"):  # the container, then its methods (with bodies)
                container = emit(child, kind, module, in_test)
                body = child.child_by_field_name("body")
                if container is not None and body is not None:
                    for member in body.named_children:
                        if member.type == "function_item":
                            if kind == "impl":
                                emit(member, "method", module, container.is_test, impl=child)
                            else:
                                emit(member, "method", module, container.is_test, trait_of=container.name)
            elif kind is not None:
                emit(child, kind, module, in_test)

    walk(root, module_path, False)
    return RustFile(items=items, use_lines=use_lines, has_error=root.has_error, dropped_broken=dropped)
