"""A method's owner, as tasks show it: the trait wrapper a trait method is checked in (cut by
its syntax node), the impl or trait head around a method, and the trait's own signature of it."""
from __future__ import annotations

import re

from synth.extract.model import block_text
from synth.rust_syntax import field_text, rust_parser


def trait_wrapper(trait_stub: str, method_name: str) -> tuple[str, str]:
    """A trait's stub opened around one of its provided methods: (head, tail) with the method's
    own entry cut out by its syntax node's byte range, so a signature over several lines goes
    whole (cutting lines left parameter lines behind: a file that does not parse)."""
    data = trait_stub.encode()
    root = rust_parser().parse(data).root_node
    trait = next((c for c in root.named_children if c.type == "trait_item"), None)
    body = trait.child_by_field_name("body") if trait is not None else None
    if body is None:
        raise ValueError(f"not a trait stub (cannot place method `{method_name}` in it): {trait_stub[:80]!r}")
    head = data[:body.end_byte - 1]  # up to the closing brace
    for member in reversed(body.named_children):
        if member.type in ("function_item", "function_signature_item") and field_text(member, "name") == method_name:
            start, end = member.start_byte, member.end_byte
            line_start = data.rfind(b"\n", 0, start) + 1
            if not data[line_start:start].strip():
                start = line_start
            if data[end:end + 1] == b"\n":
                end += 1
            head = head[:start] + head[end:]
    text = head.decode()
    return text if text.endswith("\n") else text + "\n", "}"


def owner_header(wrapper_head: str, wrapper_tail: str) -> str | None:
    """`impl<'a> Trait for One<'a>` (or `pub trait Trait`): the head of the impl or trait that a
    method's standalone file wraps it in, read from the syntax tree (where clauses included)."""
    cut = wrapper_head.find("{\n")  # the head alone (its sibling stubs can be long); else the whole
    tries = ([(wrapper_head[:cut + 2] + "}", True)] if cut >= 0 else []) + [(wrapper_head + "\n" + wrapper_tail, False)]
    for text, must_be_clean in tries:
        data = text.encode()
        root = rust_parser().parse(data).root_node
        owner = next((c for c in root.named_children if c.type in ("impl_item", "trait_item")), None)
        body = owner.child_by_field_name("body") if owner is not None else None
        if body is not None and not (must_be_clean and root.has_error):
            return data[owner.start_byte:body.start_byte].decode().strip()
    return None


def trait_member_signature(context: str, trait_name: str, method_name: str) -> str | None:
    """How the trait `trait_name`, if the context defines it, declares `method_name` (no body).
    Only the trait's own stub is parsed (contexts run to hundreds of kilobytes)."""
    if f"trait {trait_name}" not in context:  # the usual case, at a fraction of the regex's cost
        return None
    head = re.search(rf"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?trait\s+{re.escape(trait_name)}\b", context, re.M)
    if head is None:
        return None
    end = context.find("\n}\n", head.start())
    data = context[head.start():len(context) if end < 0 else end + 3].encode()
    root = rust_parser().parse(data).root_node
    for node in root.named_children:
        if node.type != "trait_item" or field_text(node, "name") != trait_name:
            continue
        body = node.child_by_field_name("body")
        for member in body.named_children if body is not None else []:
            if member.type in ("function_item", "function_signature_item") and \
                    field_text(member, "name") == method_name:
                fbody = member.child_by_field_name("body")
                end = fbody.start_byte if fbody is not None else member.end_byte
                return data[member.start_byte:end].decode().strip().removesuffix(";") + ";"
    return None


def method_owner_block(decl) -> str:
    """For a method: its impl (or trait) head, with the trait's own signature of the method when
    the context has the trait, so a task's `Self`, generics and trait are known. "" otherwise."""
    if decl.kind != "method" or decl.lang != "rust":
        return ""
    header = owner_header(decl.wrapper_head, decl.wrapper_tail) if decl.wrapper_head else None
    if header is None:
        header = (f"impl {decl.trait_name} for {decl.self_type}" if decl.trait_name and decl.self_type
                  else f"impl {decl.self_type}" if decl.self_type else f"trait {decl.trait_name}")
    inner = "    // ...\n"
    if decl.trait_name and decl.self_type:
        trait = (decl.trait_name.split("<", 1)[0].split("::")[-1]).strip()
        signature = trait_member_signature(decl.context, trait, decl.name)
        if signature:
            signature = block_text(signature)
            inner = "    // the trait declares it as:\n" + "".join(f"    {line}\n" for line in signature.splitlines())
    return f"{header} {{\n{inner}}}"
