"""Values an answer makes up rather than computes, read from the syntax tree (synth/tasks/judge/hollow.py
asks): a literal, `None`, a default value, an empty std collection, and values made from nothing
(`unsafe { std::mem::zeroed() }` compiles as a value of any type, as `todo!()` does)."""
from __future__ import annotations

from tree_sitter import Node

FROM_NOTHING = ("mem::zeroed", "mem::uninitialized")
# made from nothing (`from_nothing`): no answer may add one, as none may add a `todo!()`
MADE_FROM_NOTHING = frozenset({*(f"{name}()" for name in FROM_NOTHING), "assume_init()"})
STD = ("std::", "core::", "alloc::")  # a call of these with made-up arguments gives a made-up value


def _text(node: Node | None) -> str:
    """A node's source (as synth.rust_syntax's node_text; this module stays a leaf of the imports)."""
    return node.text.decode() if node is not None else ""


def std_function(path: str, names: tuple[str, ...]) -> str | None:
    """Which of `names` (`process::abort`) the called path is, spelled in full or from its module."""
    return next((f for f in names if path == f or path.endswith("::" + f)), None)


def from_nothing(node: Node) -> str | None:
    """A value made from nothing, as `pretending` names it: `mem::zeroed()`, `mem::uninitialized()`,
    `MaybeUninit::uninit().assume_init()`; None for anything else."""
    if node.type != "call_expression":
        return None
    callee = node.child_by_field_name("function")
    if callee.type == "field_expression" and _text(callee.child_by_field_name("field")) == "assume_init":
        return "assume_init()"
    named = std_function("".join(_text(callee).split()).split("::<")[0], FROM_NOTHING)
    return f"{named}()" if named else None


EMPTY_COLLECTIONS = frozenset(f"{kind}::new" for kind in ("String", "Vec", "VecDeque", "HashMap", "HashSet", "BTreeMap",
                                                          "BTreeSet", "BinaryHeap"))  # `Vec::new()`: an empty one
LITERALS = ("integer_literal", "float_literal", "string_literal", "boolean_literal", "char_literal", "unit_expression")


def makes_up(block: Node, work: list[Node]) -> bool:
    """All the body does is give back a value it made up: nothing (`{}`), or `made_up`."""
    if len(work) > 1:
        return False
    if work:
        return made_up(work[0])
    tail = block.named_children[-1] if block.named_children else None
    return tail is None or made_up(tail) or \
        tail.type in ("line_comment", "block_comment", "empty_statement", "let_declaration", "expression_statement")


def made_up(node: Node) -> bool:
    """A value made up, not computed: a literal, `None`, a default value, `Ok`/`Some`/`Err` of one
    (`Ok(())`: a `fmt` that writes nothing), or a std function of made-up values only
    (`std::hint::black_box(0)`, `std::convert::identity(Default::default())`); not a name or a path
    (`LeftmostFirst` for `MatchKind::LeftmostFirst` is a value of the context); `return` before it or not."""
    if node.type == "return_expression" and node.named_children:
        node = node.named_children[0]
    if node.type in LITERALS or (node.type == "identifier" and _text(node) == "None") or a_default(node):
        return True
    if node.type != "call_expression":
        return False
    callee = "".join(_text(node.child_by_field_name("function")).split())
    arguments = node.child_by_field_name("arguments").named_children
    if callee in ("Ok", "Some", "Err"):
        return len(arguments) == 1 and made_up(arguments[0])
    return callee.startswith(STD) and bool(arguments) and all(made_up(a) for a in arguments)


def a_default(node: Node) -> bool:
    """A default value and nothing else: `Default::default()`, `T::default()`, `<T as Default>::default()`,
    an empty std collection (`Vec::new()`), or a value made from nothing."""
    if from_nothing(node) is not None:
        return True
    if node.type != "call_expression" or node.child_by_field_name("arguments").named_children:
        return False
    path = "".join(_text(node.child_by_field_name("function")).split())
    return path.endswith("::default") or path.split("::<")[0] in EMPTY_COLLECTIONS
