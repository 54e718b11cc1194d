"""Tests made from the reference: where a task's reference is one free function whose parameters
are plain values (integers, floats, bool, char, strings, bytes, an Option of one), an answer must
give the reference's value on a fixed set of inputs (and not panic there). The compiler cannot
tell `<` from `<=`, `0` from `1`, or a dropped argument filled with `Default::default()` from the
one meant; these tests can, where the crate's own tests do not reach the function.

The tests are a task's `tests` (run by the judge's test path for every answer that counts, in
eval, the GRPO reward and RFT), given only where the reference passes them in the task's own file:
each input is run twice on a copy of the reference and compared only where both runs give the
same value (a function of the clock compares nothing there); an input where the reference panics
is not compared: in a task's file the other functions' bodies may be left out (`todo!()`), and an
answer that does their work itself is no wrong answer."""
from __future__ import annotations

import random
import re

from oracles.verdict import Candidate
from synth.rust_syntax import node_text, rust_parser, walk

MAX_CASES = 96  # inputs compared per task: a seeded choice among all combinations
UNSIGNED = ("0", "1", "2", "3", "7", "10", "42", "100", "255")
SIGNED = ("0", "1", "-1", "2", "-7", "10", "42", "-100", "127")
FLOATS = ("0.0", "1.0", "-1.5", "2.5", "100.0", "0.001")
STRINGS = ('""', '"a"', '"abc"', '"Hello, World!"', '"42"', '"-7"', '"1.2.3"', '"  x y  "', '"10s"', '"a-b_c"',
           '"\\n"', '"é"')
BYTES = ('b""', 'b"a"', 'b"abc"', 'b"\\x00\\xff"', 'b"Hello, World!"', 'b"42"')
VALUES = {
    **{t: UNSIGNED for t in ("u8", "u16", "u32", "u64", "u128", "usize")},
    **{t: SIGNED for t in ("i8", "i16", "i32", "i64", "i128", "isize")},
    "f32": FLOATS, "f64": FLOATS, "bool": ("false", "true"),
    "char": ("'a'", "'Z'", "'0'", "' '", "'-'", "'é'", "'\\n'"),
    "&str": STRINGS, "String": tuple(f"String::from({s})" for s in STRINGS),
    "&String": tuple(f"&String::from({s})" for s in STRINGS),
    "&[u8]": tuple(f"&{b}[..]" for b in BYTES), "Vec<u8>": tuple(f"{b}.to_vec()" for b in BYTES),
    "&Vec<u8>": tuple(f"&{b}.to_vec()" for b in BYTES),
}
LIFETIME = re.compile(r"'[A-Za-z_]\w*\s*")
BITS = {"8": 8, "16": 16, "32": 32, "64": 64, "128": 128, "size": 64}  # an integer type's width, by its suffix
INTEGER = re.compile(r"^(?:0x[0-9a-fA-F_]+|\d[\d_]*)")
ALLOWED = "#![allow(unused_imports, dead_code, unused_variables, unused_mut, unused_parens, non_snake_case, " \
          "unreachable_code, deprecated, private_interfaces)]"


def values_of(kind: str, literals: tuple[int, ...] = ()) -> tuple[str, ...] | None:
    """The inputs tried for a parameter of this type (None: not a plain value); an integer's
    include the integer literals of the reference's body and their neighbours, where the type
    holds them (the boundaries a comparison draws: `n <= 100`)."""
    kind = "".join(LIFETIME.sub("", kind).split())
    if kind.startswith("Option<") and kind.endswith(">"):
        inner = values_of(kind[len("Option<"):-1], literals)
        return ("None", *(f"Some({v})" for v in inner[:5])) if inner else None
    plain = VALUES.get(kind)
    if plain is None or kind[0] not in "ui" or not literals:
        return plain
    bits = BITS[kind[1:]]
    low, high = (0, 2 ** bits - 1) if kind[0] == "u" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    near = sorted({n + d for n in literals for d in (-1, 0, 1) if low <= n + d <= high} - {int(v) for v in plain})
    return (*plain, *map(str, near))


def integer_literals(node) -> tuple[int, ...]:
    """The integer literals of a function's body, at most 8 (the first, in order)."""
    found = []
    for n in walk(node):
        m = INTEGER.match(node_text(n)) if n.type == "integer_literal" else None
        if m and len(found) < 8:
            found.append(int(m.group(0).replace("_", ""), 0))
    return tuple(dict.fromkeys(found))


def same_value_tests(reference: str, seed: str) -> str | None:
    """The test module that runs `reference` (one free function) and the answer of its name on the
    same inputs; None where the reference is not such a function (a method, generic, unsafe or
    async, no parameters or nothing returned, a parameter that is not a plain value)."""
    data = reference.encode()
    items = [n for n in rust_parser().parse(data).root_node.named_children
             if n.type not in ("line_comment", "block_comment", "attribute_item")]
    if len(items) != 1 or items[0].type != "function_item":
        return None
    fn = items[0]
    name, returns = node_text(fn.child_by_field_name("name")), fn.child_by_field_name("return_type")
    modifiers = next((node_text(c) for c in fn.children if c.type == "function_modifiers"), "")
    if fn.child_by_field_name("type_parameters") is not None or returns is None or node_text(returns) == "!" \
            or re.search(r"\b(unsafe|async)\b", modifiers):
        return None
    params = fn.child_by_field_name("parameters").named_children
    if not params or any(p.type != "parameter" for p in params):
        return None  # `self`, a variadic, an attribute on a parameter
    literals = integer_literals(fn.child_by_field_name("body"))
    choices = [values_of(node_text(p.child_by_field_name("type")), literals) for p in params]
    if any(c is None for c in choices):
        return None
    cases = [", ".join(c) for c in _cases(choices, seed)]
    return _module(name, _visible(data, fn), cases)


def _cases(choices: list[tuple[str, ...]], seed: str) -> list[tuple[str, ...]]:
    """Every combination of the inputs, or a seeded choice of MAX_CASES of them, in order."""
    total = 1
    for c in choices:
        total *= len(c)
    picked = range(total) if total <= MAX_CASES else sorted(random.Random(seed).sample(range(total), MAX_CASES))
    out = []
    for index in picked:
        case = []
        for c in reversed(choices):
            index, at = divmod(index, len(c))
            case.append(c[at])
        out.append(tuple(reversed(case)))
    return out


def _visible(data: bytes, fn) -> str:
    """The reference with its visibility made `pub(crate)` (the test module calls its copy)."""
    vis = next((c for c in fn.children if c.type == "visibility_modifier"), None)
    start, end = (vis.start_byte, vis.end_byte) if vis is not None else (fn.start_byte, fn.start_byte)
    return (data[:start] + (b"pub(crate)" if vis is not None else b"pub(crate) ") + data[end:]).decode()


def _module(name: str, reference: str, cases: list[str]) -> str:
    copy = "\n".join(("        " + line) if line.strip() else "" for line in reference.strip("\n").splitlines())
    checks = "".join(
        f"        let want = seen(|| reference::{name}({args}));\n"
        f"        if want.is_some() && want == seen(|| reference::{name}({args})) {{\n"
        f"            compared += 1;\n"
        f"            assert_eq!(seen(|| super::{name}({args})), want, \"input {k}\");\n"
        f"        }}\n" for k, args in enumerate(cases))
    return (f"#[cfg(test)]\nmod __synth_same_values {{\n    {ALLOWED}\n    use super::*;\n\n"
            f"    mod reference {{\n        {ALLOWED}\n        use super::super::*;\n\n{copy}\n    }}\n\n"
            "    fn seen<T: ::std::fmt::Debug>(f: impl FnOnce() -> T) -> Option<String> {\n"
            "        ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(f)).ok().map(|v| format!(\"{:?}\", v))\n"
            "    }\n\n"
            "    #[test]\n    fn the_references_values() {\n"
            "        ::std::panic::set_hook(Box::new(|_| {}));\n"
            "        let mut compared = 0;\n"
            f"{checks}"
            "        assert!(compared > 0, \"no input gives the reference one value and no panic\");\n"
            "    }\n}\n")


def with_same_value_tests(tasks: list, oracle) -> int:
    """Gives each standalone Rust repair or codegen task with no tests of its own the same-value
    tests of its reference, where the reference passes them in the task's file (one test run per
    task, cached by the oracle); returns how many tasks got them."""
    wanted = []
    for i, task in enumerate(tasks):
        if task.lang != "rust" or task.tests or task.in_crate is not None or task.family not in ("repair", "codegen"):
            continue
        module = same_value_tests(task.reference, task.id)
        if module is not None:
            wanted.append((i, task.model_copy(update={"tests": module})))
    verdicts = oracle.test([Candidate.of(t.source(t.reference, with_tests=True)) for _, t in wanted]) if wanted else []
    given = 0
    for (i, task), verdict in zip(wanted, verdicts):
        result = verdict.tests  # `ok`: ran in time, at least one test, none failed
        if verdict.passed and result is not None and result.ok and result.passed == result.total:
            tasks[i] = task
            given += 1
    return given
