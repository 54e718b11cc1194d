"""Rust answers that only pretend, read from their syntax tree (tree-sitter): a function or method
whose body never does its job, or an attribute the answer adds to hide what the compiler would say.

A body pretends when, in its straight-line code (plain and `unsafe` blocks at any nesting, not
inside a branch, but an `if`/`else` or a `match` whose every way diverges), it diverges (a `loop`
with no `break`, `return` or `?` in it, `panic!`, `unreachable!`, `todo!`, `unimplemented!`, or
a call of a std function that never returns: `process::abort()`, `process::exit(..)`,
`hint::unreachable_unchecked()`, `panic::panic_any(..)`, or one the task's code or the answer
itself declares `-> !`: cc's `fail(msg)`, an `extern "C" { fn abort() -> !; }`, a closure that
never returns called there), whatever statements come before; when
all it does, besides statements that do nothing (`let _ = 0;`, `;`, a bare literal), is call
itself; when all it does is give back a value it made up (nothing, a literal, `None`,
`Default::default()`, `mem::zeroed()`, a std function of such values: `{ 0 }` compiles wherever a
`u32` is asked) where the reference's body of that name does more; or when it reads none of the
function's inputs (its parameters, `self`) where the reference's body reads them
(`println!("x"); Default::default()` is no work on them). And anywhere, a `todo!` or `unimplemented!` (for a
repair any of those ways to diverge, or a value made from nothing, `mem::zeroed()`: a missing
argument filled with `std::process::abort()` or `unsafe { std::mem::zeroed() }` compiles as
`todo!()` does) the reference does not have. Real code diverges now and then (a function that
ends in `unreachable!()` after its loop): a function whose reference diverges too may, but a
reference that does real work before diverging does not license a body that does nothing else.
Own attributes: `#[allow(..)]`, `#[expect(..)]`, `#[cfg(..)]`, `#[cfg_attr(..)]` (outer or
inner) that the reference does not have, a `macro_rules!` or an `extern` block of its own (what
its expansion or a foreign function does is not read here: `extern "C" { fn abort(); }`), and a
diverging std macro under a name of its own (`use std::todo as later;`).
Found by attacking the judge (`synth bench judge`): the closures, the made-up values wrapped or
after unrelated calls and the renamed macros each counted on the loop's held-out tasks once."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tree_sitter import Node

from synth.rust_syntax import does_nothing, node_text as _text, rust_parser, unwrapped, use_paths, walk as _walk

from .made_up import MADE_FROM_NOTHING, from_nothing, makes_up, std_function

DIVERGING_MACROS = frozenset({"panic", "unreachable", "todo", "unimplemented"})
UNWRITTEN = frozenset({"todo!()", "unimplemented!()"})  # said to be unwritten: no answer may add one
# std functions that never return (`-> !`): as `todo!()`, a call stands for a value of any type
DIVERGING_CALLS = ("process::abort", "process::exit", "panic::panic_any", "panic::resume_unwind",
                   "hint::unreachable_unchecked", "intrinsics::abort", "intrinsics::unreachable")
BARE_DIVERGING = frozenset({"unreachable_unchecked", "panic_any", "resume_unwind"})  # imported: no other meaning
WAYS_OUT = frozenset({"break_expression", "return_expression", "try_expression"})  # what ends a `loop`
ASSERTS = frozenset({"assert", "debug_assert"})  # `assert!(false)` panics as `panic!()` does
UNWRAPS = frozenset({"unwrap", "expect"})  # on `None` or `Err(..)`, a panic
HIDING_ATTRIBUTES = frozenset({"allow", "expect", "cfg", "cfg_attr"})
PLAIN_BLOCKS = ("block", "unsafe_block")
INLINE_ARGUMENT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)")  # `{x}`, `{x:?}` in a format string: `x` read


@dataclass(frozen=True)
class Body:
    """What one function's body does, as far as pretending goes."""
    name: str
    diverges: bool  # its straight-line code never completes
    only_diverges: bool  # ... and does nothing else first
    calls: str  # all it does is call this function of the code (itself, or one that calls it back): ''
    makes_up: bool = False  # all it does is give back a value it made up: `0`, `None`, `Default::default()`
    reads_inputs: bool | None = None  # its body names one of its parameters or `self` (None: it has none)


@dataclass(frozen=True)
class Reading:
    """What pretending looks at in one piece of code, from one parse and one walk of its tree."""
    attributes: Counter  # its lint and configuration attributes, whitespace squeezed: `#[allow(dead_code)]`
    stand_ins: Counter  # what stands for code not written, wherever it is: `todo!()`, `process::abort()`,
    # `loop {}` (the ways to diverge), `mem::zeroed()` (a value made from nothing)
    bodies: list[Body]  # every function or method it defines with a body (in impls, traits and bodies too)


def read(code: str, own: frozenset[str] = frozenset()) -> Reading:
    """`own`: the functions of the task's code that never return (`never_returning`); what this
    code itself names so (`own_names`: `extern "C" { fn abort() -> !; }`, `use std::process::abort
    as stop;`) is added."""
    attributes, stand_ins, bodies = Counter(), Counter(), []
    root = rust_parser().parse(code.encode()).root_node
    own = own | own_names(root)
    for node in _walk(root):
        if node.type in ("attribute_item", "inner_attribute_item"):
            attribute = next((c for c in node.named_children if c.type == "attribute"), None)
            head = attribute.named_children[0] if attribute is not None and attribute.named_children else None
            if head is not None and _text(head) in HIDING_ATTRIBUTES:
                attributes["".join(_text(node).split())] += 1
        elif node.type == "macro_definition":  # its body is tokens, unread here: `nope!()` may be `loop {}`
            attributes[f"macro_rules! {_text(node.child_by_field_name('name'))}"] += 1
        elif node.type == "foreign_mod_item":  # what a foreign function does is not read either: libc's `abort()`
            attributes["extern block " + "".join(_text(node).split())] += 1
        elif node.type == "use_declaration":  # `use std::todo as later;`: `later!()` is `todo!()` unnamed
            attributes.update(f"use {path} as {local}" for local, path in use_paths(node.child_by_field_name("argument"))
                              if path.split("::")[-1] in DIVERGING_MACROS and local != path.split("::")[-1])
        elif (way := _diverging(node, own) or from_nothing(node)) is not None:
            stand_ins[way] += 1
        if node.type == "function_item" and (body := node.child_by_field_name("body")) is not None:
            name = _text(node.child_by_field_name("name"))
            work = _effective(body)
            bodies.append(Body(name, _block_diverges(body, own), bool(work) and _diverges(work[0], own),
                               _callee(work[0]) if len(work) == 1 else "", makes_up(body, work),
                               _reads_inputs(node, body)))
    return Reading(attributes, stand_ins, bodies)


def pretending(code: str, reference: str, repair: bool = False, own: frozenset[str] = frozenset()) -> str:
    """Why a Rust answer only pretends ('' when it does not): its first hollow function, an
    attribute of its own that hides code or lints, a `todo!`/`unimplemented!` or a value made from
    nothing (`mem::zeroed()`) the reference does not have (anywhere: a match arm `_ => todo!()`
    compiles too), and for a repair, any other way to diverge the original does not have (the case
    it handled given up: `f(std::process::abort())`).
    `own`: the functions of the task's code that never return (`never_returning`)."""
    mine, original = read(code, own), read(reference, own)
    own = mine.attributes - original.attributes
    if own:
        return f"adds {sorted(own)[0]} of its own"
    added = mine.stand_ins - original.stand_ins
    unwritten = sorted(way for way in added if way in UNWRITTEN or way in MADE_FROM_NOTHING or repair)
    if unwritten:
        return f"adds {unwritten[0]} where the original has none"
    allowed = {b.name: b for b in original.bodies}
    calls, called = {b.name: b.calls for b in mine.bodies}, {b.name: b.calls for b in original.bodies}
    for body in mine.bodies:
        theirs = allowed.get(body.name)
        if _calls_back(body.name, calls) and not _calls_back(body.name, called):
            return f"fn {body.name} only calls itself"
        if body.diverges and not (theirs and theirs.diverges and (theirs.only_diverges or not body.only_diverges)):
            return f"fn {body.name} only diverges (panics, loops or is not written)"
        if body.makes_up and theirs is not None and not theirs.makes_up:  # the original's work, not done
            return f"fn {body.name} only gives back a value it made up"
        if body.reads_inputs is False and theirs is not None and theirs.reads_inputs:
            return f"fn {body.name} reads none of its inputs, where the original reads them"  # `println!(); 0`
    return ""


def _effective(block: Node) -> list[Node]:
    """The block's statements that do something, plain blocks opened up."""
    out = []
    for statement in block.named_children:
        inner = unwrapped(statement)
        if inner.type in PLAIN_BLOCKS:
            out.extend(_effective(inner))
        elif not does_nothing(statement):
            out.append(inner)
    return out


def _block_diverges(block: Node, own: frozenset[str]) -> bool:
    return any(_diverges(s, own) for s in block.named_children)


def _diverges(statement: Node, own: frozenset[str]) -> bool:
    """The statement never completes, whatever its branches would do (none is looked into)."""
    node = unwrapped(statement)
    if node.type in PLAIN_BLOCKS:
        inner = node if node.type == "block" else next((c for c in node.named_children if c.type == "block"), None)
        return inner is not None and _block_diverges(inner, own)
    if _diverging(node, own) is not None:
        return True
    if node.type == "if_expression":  # every way diverges: `if c { loop {} } else { panic!() }`
        other = node.child_by_field_name("alternative")
        branch = other.named_children[0] if other is not None and other.named_children else None
        return branch is not None and _diverges(node.child_by_field_name("consequence"), own) and _diverges(branch, own)
    if node.type == "match_expression":
        arms = [a.child_by_field_name("value") for a in node.child_by_field_name("body").named_children
                if a.type == "match_arm"]
        return bool(arms) and all(v is not None and _diverges(v, own) for v in arms)
    if node.type in ("let_declaration", "return_expression"):
        value = node.child_by_field_name("value") if node.type == "let_declaration" else \
            (node.named_children[0] if node.named_children else None)
        return value is not None and _diverges(value, own)
    return False


def _diverging(node: Node, own: frozenset[str] = frozenset()) -> str | None:
    """The way this node itself diverges, as `pretending` names it: a diverging macro, a call of a
    std function that never returns or of one of `own`, a `loop` nothing in it can leave; None for
    anything else."""
    if node.type == "macro_invocation":
        name = _text(node.child_by_field_name("macro")).split("::")[-1]
        tokens = next((c for c in node.named_children if c.type == "token_tree"), None)
        if name in ASSERTS and tokens is not None and re.match(r"\(\s*false\s*[,)]", _text(tokens)):
            return "panic!()"  # `assert!(false)`
        return f"{name}!()" if name in DIVERGING_MACROS else None
    if node.type == "loop_expression" or (node.type == "while_expression" and  # `while true {}` is a `loop`
                                          _text(node.child_by_field_name("condition")) == "true"):
        return None if any(n.type in WAYS_OUT for n in _walk(node)) else "loop {}"
    if node.type == "call_expression":
        callee = _bare(node.child_by_field_name("function"))
        if callee.type == "closure_expression":  # `(|| -> ! { loop {} })()`: its body runs here
            return _closure_diverges(callee, own)
        if callee.type == "field_expression" and _text(callee.child_by_field_name("field")) in UNWRAPS and \
                _fails(_bare(callee.child_by_field_name("value"))):
            return "panic!()"  # `None.unwrap()`, `Err(e).expect(..)`
        path = "".join(_text(callee).split())
        named = std_function(path, DIVERGING_CALLS)
        last = re.split(r"::|\.", path.split("::<")[0])[-1]  # `fail`, `crate::fail`, `self.fail`
        return f"{named}()" if named else (f"{path}()" if path in BARE_DIVERGING else
                                           (f"{last}()" if last in own else None))
    return None


def _closure_diverges(closure: Node, own: frozenset[str]) -> str | None:
    """How a closure's body diverges (None where it can complete): declared `-> !`, or its body does."""
    body, kind = closure.child_by_field_name("body"), closure.child_by_field_name("return_type")
    if not _diverges(body, own) and not (kind is not None and kind.type == "never_type"):
        return None
    return next((way for n in _walk(body) if (way := _diverging(n, own)) is not None), "loop {}")


def never_returning(sources: list[str]) -> frozenset[str]:
    """The functions the sources declare that never return (`-> !`), by name, where no function
    of that name returns: a call of one stands for a value of any type, as `todo!()` does. Bodiless
    declarations count too: `extern "C" { fn abort() -> !; }` is libc's abort."""
    return _declared_never_returning([rust_parser().parse(source.encode()).root_node for source in sources])


def own_names(root: Node) -> frozenset[str]:
    """What never returns under a name one piece of code gives it: the functions it declares
    `-> !` (`never_returning`) and its own names for std ones (`diverging_aliases`)."""
    return _declared_never_returning([root]) | diverging_aliases(root)


def _declared_never_returning(roots: list[Node]) -> frozenset[str]:
    returns: dict[str, set[bool]] = {}
    for root in roots:
        for node in _walk(root):
            if node.type in ("function_item", "function_signature_item"):
                kind = node.child_by_field_name("return_type")
                returns.setdefault(_text(node.child_by_field_name("name")), set()).add(
                    kind is not None and kind.type == "never_type")
    return frozenset(name for name, kinds in returns.items() if kinds == {True})


def _reads_inputs(function: Node, body: Node) -> bool | None:
    """Whether the body names one of the function's parameters or `self` (macro arguments
    included, and a format string's `{x}`); None for a function that has none."""
    inputs = set()
    for parameter in function.child_by_field_name("parameters").named_children:
        if parameter.type == "self_parameter":
            inputs.add("self")
        elif parameter.type == "parameter":
            inputs |= {_text(n) for n in _walk(parameter.child_by_field_name("pattern")) if n.type == "identifier"}
    if not inputs:
        return None
    return any((n.type in ("identifier", "self") and _text(n) in inputs) or
               (n.type == "string_content" and inputs & set(INLINE_ARGUMENT.findall(_text(n)))) for n in _walk(body))


def _callee(node: Node) -> str:
    """The function a call calls, by name ('' for anything else): `name(..)`, `Self::name(..)`,
    `self.name(..)`, `Type::name(..)`."""
    if node.type == "return_expression" and node.named_children:
        node = node.named_children[0]
    if node.type != "call_expression":
        return ""
    callee = node.child_by_field_name("function")
    last = callee.child_by_field_name("field" if callee.type == "field_expression" else "name") \
        if callee.type in ("field_expression", "scoped_identifier") else callee
    if callee.type == "field_expression" and _text(callee.child_by_field_name("value")) != "self":
        return ""
    return _text(last) if last is not None else ""


def _calls_back(name: str, calls: dict[str, str]) -> bool:
    """Following what each body only calls, from `name`, comes back to it (`f` calls `f`, or `f`
    calls `g` which only calls `f`)."""
    seen, at = set(), name
    while calls.get(at) and at not in seen:
        seen.add(at)
        at = calls[at]
    return at == name and name in seen


def _bare(node: Node) -> Node:
    """An expression without the parentheses and casts around it: `(abort as fn() -> !)` is `abort`."""
    while node.type in ("parenthesized_expression", "type_cast_expression") and node.named_children:
        node = node.child_by_field_name("value") or node.named_children[0]
    return node


def _fails(node: Node) -> bool:
    """A value whose unwrapping always panics: `None`, `Err(..)`."""
    return (node.type == "identifier" and _text(node) == "None") or \
        (node.type == "call_expression" and _text(node.child_by_field_name("function")) == "Err")


def diverging_aliases(root: Node) -> frozenset[str]:
    """The code's own names for a std function that never returns: `use std::process::abort;`,
    `use std::process::{exit as quit};`, `let stop = std::process::abort;`, and for a closure that
    does not return."""
    names = set()
    for node in _walk(root):
        if node.type == "use_declaration":
            names |= {local for local, path in use_paths(node.child_by_field_name("argument"))
                      if std_function(path, DIVERGING_CALLS)}
        elif node.type == "let_declaration" and (value := node.child_by_field_name("value")) is not None:
            pattern = node.child_by_field_name("pattern")
            diverging = _closure_diverges(value, frozenset()) if value.type == "closure_expression" else \
                std_function("".join(_text(_bare(value)).split()), DIVERGING_CALLS)
            if pattern.type == "identifier" and diverging:  # `let stop = || -> ! { loop {} };` too
                names.add(_text(pattern))
    return frozenset(names)
