"""Tree-sitter pre-screen of a standalone Rust candidate: can it share a batch with others?

A candidate is wrapped in its own module inside the batch. That is only exact when the candidate
means the same thing inside a module as at a crate root, and when rustc will not give up on the
whole batch because of it. Anything else is checked alone, with the reason recorded.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import tree_sitter_rust
from tree_sitter import Language, Node, Parser, Query, QueryCursor


@functools.cache
def rust_parser() -> Parser:
    return Parser(Language(tree_sitter_rust.language()))


ITEM_NAME_KINDS = {
    "function_item", "function_signature_item", "struct_item", "enum_item", "union_item", "trait_item",
    "type_item", "const_item", "static_item", "mod_item", "macro_definition", "enum_variant",
}


TYPE_ITEM_KINDS = {"struct_item", "enum_item", "union_item", "trait_item", "type_item"}


# Names the prelude always resolves: mentioning one never makes rustc look at other modules.
PRELUDE = {
    "Option", "Some", "None", "Result", "Ok", "Err", "Vec", "String", "Box", "ToString", "ToOwned", "Clone", "Copy",
    "Default", "Drop", "Eq", "PartialEq", "Ord", "PartialOrd", "Fn", "FnMut", "FnOnce", "From", "Into", "Iterator",
    "IntoIterator", "Send", "Sync", "Sized", "AsRef", "AsMut", "Debug", "Hash", "Self", "self", "std", "core", "alloc",
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool", "char",
    "str", "println", "print", "format", "vec", "assert", "assert_eq", "panic", "todo", "unimplemented", "write",
}


@dataclass
class Screen:
    solo_reason: str | None  # why the candidate must be checked alone; None = batchable
    is_program: bool  # has a top-level `fn main`: checked as a binary crate
    defined: set[str] = field(default_factory=set)  # names of items it defines (anywhere)
    mentioned: set[str] = field(default_factory=set)  # identifiers it uses
    types: set[str] = field(default_factory=set)  # structs, enums, unions, traits, aliases at its top level

    @property
    def free_names(self) -> set[str]:
        """Names it mentions but does not define: where another candidate's item could leak in."""
        return self.mentioned - self.defined - PRELUDE


def _top_level_main(root: Node) -> bool:
    for child in root.named_children:
        if child.type == "function_item":
            name = child.child_by_field_name("name")
            if name is not None and name.text == b"main":
                return True
    return False


def _inside(node: Node, kind: str) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type == kind:
            return True
        parent = parent.parent
    return False


def _is_crate_visibility(node: Node) -> bool:
    """`pub(crate)` means the same in a module of the batch as at a crate root; `pub(in crate::x)` does not."""
    parent = node.parent
    return parent is not None and parent.type == "visibility_modifier" and b"in" not in [c.text for c in parent.children]


def _is_associated(node: Node) -> bool:
    """Methods and associated items cannot be imported, so they never leak between candidates."""
    parent = node.parent
    return parent is not None and parent.type == "declaration_list" and parent.parent is not None \
        and parent.parent.type in ("impl_item", "trait_item")


SCREEN_QUERY = """
(inner_attribute_item (attribute . (identifier) @inner))
(extern_crate_declaration) @extern_crate
(crate) @crate
(metavariable) @metavariable
(super) @super
(mod_item) @mod
(attribute . (identifier) @attribute)
(identifier) @ident
(type_identifier) @ident
"""
MODULE_INNER_ATTRIBUTES = {"allow", "warn", "deny", "forbid", "expect", "doc"}
CRATE_GLOBAL_ATTRIBUTES = {"macro_export", "path", "no_mangle", "export_name", "global_allocator", "panic_handler"}


@functools.cache
def _screen_query() -> tuple[Query, Language]:
    language = Language(tree_sitter_rust.language())
    return Query(language, SCREEN_QUERY), language


def screen(text: str) -> Screen:
    tree = rust_parser().parse(text.encode())
    root = tree.root_node
    is_program = _top_level_main(root)
    if root.has_error:
        return Screen("syntax error (tree-sitter)", is_program)
    captures = QueryCursor(_screen_query()[0]).captures(root)
    reasons = []
    if is_program:
        reasons.append("fn main (checked as a binary)")
    # Lint levels and docs mean the same at the top of a module; anything else is crate-level.
    if any(n.text.decode() not in MODULE_INNER_ATTRIBUTES for n in captures.get("inner", [])):
        reasons.append("inner attribute (crate-level)")
    if captures.get("extern_crate"):
        reasons.append("extern crate")
    if any(not _is_crate_visibility(n) for n in captures.get("crate", [])):
        reasons.append("`crate::` path (means the batch root inside a batch)")
    if any(n.text == b"$crate" for n in captures.get("metavariable", [])):
        reasons.append("`$crate` in a macro")
    if any(not _inside(n, "mod_item") for n in captures.get("super", [])):
        reasons.append("top-level `super`")
    if any(n.child_by_field_name("body") is None for n in captures.get("mod", [])):
        reasons.append("out-of-line `mod x;`")
    for node in captures.get("attribute", []):
        if node.text.decode() in CRATE_GLOBAL_ATTRIBUTES:
            reasons.append(f"crate-global attribute #[{node.text.decode()}]")
    idents = captures.get("ident", [])
    mentioned = {n.text.decode() for n in idents}
    defined = {n.text.decode() for n in idents if _names_item(n)}
    types = {name.text.decode() for item in root.named_children if item.type in TYPE_ITEM_KINDS
             for name in [item.child_by_field_name("name")] if name is not None}
    return Screen(reasons[0] if reasons else None, is_program, defined, mentioned, types)


def _names_item(ident: Node) -> bool:
    """Is this identifier the name of a (non-associated) item?"""
    parent = ident.parent
    return parent is not None and parent.type in ITEM_NAME_KINDS and \
        parent.child_by_field_name("name") == ident and not _is_associated(parent)
