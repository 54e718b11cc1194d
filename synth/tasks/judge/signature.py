"""Whether a Rust repair answer keeps what callers see of the declaration: its signature.

Read from the answer's syntax tree, not its text (the original pasted into a string literal is no
signature). The same signature spelled the same way (comments and whitespace aside) is kept. A
different spelling may still be the same types (`fmt::Result` and `Result<(), std::fmt::Error>`):
rustc decides, through a probe placed right after the answer in its own scope, which coerces the
answer's function to the original signature's fn-pointer type (generics and `where` clause
copied from the original); it compiles only if the types agree. A method of a trait impl keeps
its signature when it compiles: the trait fixes what callers see, and rustc has checked the
method against it. Visibility and `const`/`unsafe`/`extern` are compared as written: no fn-pointer
type tells `pub fn` from `fn`, and a safe fn coerces to an `unsafe fn` pointer. An `async`
function, one with `impl Trait` arguments or a whole impl is kept only as written: no fn-pointer
type names them."""
from __future__ import annotations

from tree_sitter import Node

from synth.assemble.answers import normalize_answer
from synth.rust_syntax import node_text as _text, rust_parser, walk as _walk

PROBE_NAME = "synth_signature_probe"


def squeezed(text: str) -> str:
    return "".join(normalize_answer(text, "rust").split())


def definition(code: str, signature: str) -> Node | None:
    """The answer's item that stands for the declaration: the function of the signature's name
    (the first at the top, else the first anywhere), or for an impl, the impl of the same header."""
    wanted = _signature_item(signature)
    if wanted is None:
        return None
    root = rust_parser().parse(code.encode()).root_node
    if wanted.type == "impl_item":
        return next((n for n in root.named_children if n.type == "impl_item" and squeezed(head(n)) == squeezed(signature)),
                    None)
    return _named_function(root, _text(wanted.child_by_field_name("name")))


def head(item: Node) -> str:
    """An item's text up to its body: what callers see of it."""
    body = item.child_by_field_name("body")
    end = body.start_byte if body is not None else item.end_byte
    return item.text[:end - item.start_byte].decode()


def same_text(code: str, signature: str) -> bool:
    item = definition(code, signature)
    return item is not None and squeezed(head(item)) == squeezed(signature)


def same_qualifiers(code: str, signature: str) -> bool:
    """The answer's function is as visible and as `const`/`unsafe`/`async`/`extern` as the
    original: what no fn-pointer type says (`pub fn` -> `fn`, `unsafe fn` -> `fn` pass the probe)."""
    item, original = definition(code, signature), _signature_item(signature)
    return item is not None and original is not None and _qualifiers(item) == _qualifiers(original)


def _qualifiers(item: Node) -> tuple[str, ...]:
    return tuple(" ".join(_text(c).split()) for c in item.children if c.type in ("visibility_modifier", "function_modifiers"))


def probe(signature: str, method: bool) -> str | None:
    """Code that compiles, placed after the answer in its scope (the impl block for a method), only
    when the answer's function has the original signature's types; None where no fn-pointer type
    can name it."""
    item = _signature_item(signature)
    if item is None or item.type != "function_item":
        return None
    modifiers = next((c for c in item.children if c.type == "function_modifiers"), None)
    if modifiers is not None and any(m.type in ("async", "extern_modifier") for m in modifiers.children):
        return None
    types = []
    for parameter in item.child_by_field_name("parameters").named_children:
        kind = _parameter_type(parameter)
        if kind is None:
            return None
        if kind:
            types.append(kind)
    if any(n.type == "abstract_type" for n in _walk(item)):
        return None
    generics = item.child_by_field_name("type_parameters")
    arguments = [_text(p.child_by_field_name("name")) for p in (generics.named_children if generics else ())
                 if p.type in ("type_parameter", "const_parameter")]
    returns = item.child_by_field_name("return_type")
    where = next((c for c in item.children if c.type == "where_clause"), None)
    unsafe = "unsafe " if modifiers is not None and "unsafe" in _text(modifiers) else ""
    pointer = f"{unsafe}fn({', '.join(types)})" + (f" -> {_text(returns)}" if returns is not None else "")
    name = _text(item.child_by_field_name("name"))
    path = ("Self::" if method else "") + name + (f"::<{', '.join(arguments)}>" if arguments else "")
    return (f"\n#[allow(dead_code)]\nfn {PROBE_NAME}{_text(generics)}() {_text(where)} "
            f"{{\n    let _: {pointer} = {path};\n}}\n")


def _parameter_type(parameter: Node) -> str | None:
    """A parameter's type in the fn-pointer type ('' for none: a comment); None: cannot be named."""
    if parameter.type in ("line_comment", "block_comment", "attribute_item"):
        return ""
    if parameter.type == "self_parameter":  # `&'a mut self` -> `&'a mut Self`, `mut self` -> `Self`
        text = _text(parameter)
        return (text[:text.rindex("self")] + "Self") if text.removeprefix("mut ").startswith("&") else "Self"
    if parameter.type == "parameter":
        kind = parameter.child_by_field_name("type")
        return _text(kind) if kind is not None else None
    return None


def _signature_item(signature: str) -> Node | None:
    root = rust_parser().parse((signature.strip() + " {}").encode()).root_node
    items = [n for n in root.named_children if n.type in ("function_item", "impl_item")]
    return items[0] if len(items) == 1 and not root.has_error else None


def same_shape(code: str, reference: str, name: str) -> bool:
    """A codegen answer's function `name` takes and gives what the reference's does, as written
    (qualifiers, generics, each parameter's type, the return type, the `where` clause; the
    parameters' names aside): the task shows the signature, and a function of another signature
    compiles too (`fn free_buffer(&self) { let _x = 1 + 1; }` compiled for every held-out codegen
    task). Where the reference has no such function there is nothing to compare."""
    wanted = _named_function(rust_parser().parse(reference.encode()).root_node, name)
    if wanted is None:
        return True
    given = _named_function(rust_parser().parse(code.encode()).root_node, name)
    return given is not None and _shape(given) == _shape(wanted)


def _named_function(root: Node, name: str) -> Node | None:
    """The function of that name: the first at the top, else the first anywhere (a method in its impl)."""
    found = [n for n in _walk(root) if n.type == "function_item" and _text(n.child_by_field_name("name")) == name]
    return next((n for n in found if n.parent is not None and n.parent.type == "source_file"), found[0] if found else None)


def _shape(item: Node) -> tuple:
    parameters = tuple(squeezed(_parameter_type(p) or _text(p)) for p in item.child_by_field_name("parameters").named_children
                       if p.type not in ("line_comment", "block_comment", "attribute_item"))
    where = next((c for c in item.children if c.type == "where_clause"), None)
    return (_qualifiers(item), squeezed(_text(item.child_by_field_name("type_parameters"))), parameters,
            squeezed(_text(item.child_by_field_name("return_type"))), squeezed(_text(where)))
