"""Tests made from the reference (synth/tasks/judge/same_values.py), on real rustc: a wrong value
that compiles (an operator swapped, a literal changed, a panic where the reference gives a value)
fails them and does not count; a rewrite with the same values passes; inputs whose value changes
from one run to the next (the clock) are not compared; only functions of plain values get them."""
from synth.tasks.judge import Judge
from synth.tasks.judge.same_values import same_value_tests, values_of, with_same_value_tests
from synth.tasks.task import Task

CONTEXT = "/// The most a meter reads.\npub const LIMIT: u32 = 100;\n\n"
REFERENCE = ("pub fn capped_sum(a: u32, b: u32) -> u32 {\n    if a + b <= LIMIT {\n        a + b\n    } else {\n"
             "        LIMIT\n    }\n}")


def task(reference: str = REFERENCE, family: str = "repair") -> Task:
    signature = reference.split(" {", 1)[0]
    return Task(id=f"t-{family}", lang="rust", family=family, prompt="fix it", must_define=["fn capped_sum"],
                reference=reference, broken=reference.replace("LIMIT\n    }", "LIMT\n    }"), signature=signature,
                context=CONTEXT, before=CONTEXT if family == "repair" else "", after="\n" if family == "repair" else "")


def test_only_functions_of_plain_values_get_them():
    assert values_of("&'a str") == values_of("&str") and values_of("Option<u8>")[:2] == ("None", "Some(0)")
    assert same_value_tests(REFERENCE, "s") is not None
    for other in ("pub fn f<T: Copy>(a: T) -> T {\n    a\n}",  # generic
                  "pub fn f(&self) -> u32 {\n    1\n}",  # a method
                  "pub unsafe fn f(a: u32) -> u32 {\n    a\n}",
                  "pub fn f(a: u32) {\n    let _ = a;\n}",  # nothing to compare
                  "pub fn f() -> u32 {\n    1\n}",  # no input
                  "pub fn f(a: &mut Vec<u32>) -> usize {\n    a.len()\n}",  # not a plain value
                  "impl Meter {\n    pub fn f(a: u32) -> u32 {\n        a\n    }\n}"):
        assert same_value_tests(other, "s") is None, other
    assert same_value_tests(REFERENCE, "s") == same_value_tests(REFERENCE, "s")  # seeded: the same text
    many = "pub fn f(a: u64, b: &str, c: char) -> usize {\n    a as usize + b.len() + c.len_utf8()\n}"
    assert same_value_tests(many, "s").count("let want =") == 96  # a seeded choice of 9 * 12 * 7 inputs
    bounded = "pub fn f(a: u8) -> bool {\n    a > 200 && a < 0x1_00\n}"  # 256: no u8
    assert [v for v in values_of("u8", (200, 256)) if v not in values_of("u8")] == ["199", "200", "201"]
    assert "f(201)" in same_value_tests(bounded, "s")


def test_a_wrong_value_fails_them_and_a_rewrite_passes(rust_oracle):
    tasks = [task(), task(family="codegen")]
    assert with_same_value_tests(tasks, rust_oracle) == 2 and all("__synth_same_values" in t.tests for t in tasks)
    answers = {"exact": REFERENCE,
               "rewritten": REFERENCE.replace("if a + b <= LIMIT", "if LIMIT >= b + a"),
               "operator swapped": REFERENCE.replace("<=", ">="),
               "literal changed": REFERENCE.replace("if a + b", "if a + b + 0 * 1"),  # same values: a control
               "another value": REFERENCE.replace("        LIMIT\n", "        LIMIT - 1\n"),
               "panics": REFERENCE.replace("        a + b\n", "        (b / a) * 0 + a + b\n")}  # where a is 0
    judge = Judge({"rust": rust_oracle})
    for t in tasks:
        got = dict(zip(answers, judge.judge([t] * len(answers), [f"```rust\n{a}\n```" for a in answers.values()])))
        assert got["exact"].passed and got["rewritten"].passed and got["literal changed"].passed, t.family
        for wrong in ("operator swapped", "another value", "panics"):
            assert got[wrong].solved and got[wrong].tests == 0.0 and not got[wrong].passed, (t.family, wrong)


def test_inputs_whose_value_changes_from_run_to_run_are_not_compared(rust_oracle):
    """The clock where `a` is 0: those inputs are left out, the others still tell a wrong value;
    where every input reads the clock, the task gets no tests."""
    clock = "std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()"
    some = f"pub fn capped_sum(a: u32, b: u32) -> u128 {{\n    if a == 0 {{ {clock} }} else {{ (a + b) as u128 }}\n}}"
    every = f"pub fn capped_sum(a: u32, b: u32) -> u128 {{\n    {clock} + (a + b) as u128\n}}"
    tasks = [task(some), task(every)]
    assert with_same_value_tests(tasks, rust_oracle) == 1 and tasks[0].tests and tasks[1].tests == ""
    wrong = some.replace("(a + b) as u128", "(a + b + 1) as u128")
    assert not Judge({"rust": rust_oracle}).judge([tasks[0]], [f"```rust\n{wrong}\n```"])[0].passed


def test_both_the_crates_tests_and_the_references_values_must_pass(rust_oracle, tmp_path):
    """A crate whose own test does not reach the wrong value: the same-value tests still refuse it."""
    from oracles.factory import build_oracle
    from synth.tasks.task import CrateSpot

    root = tmp_path / "meter"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "meter"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "lib.rs").write_text(CONTEXT + REFERENCE + "\n\n#[test]\nfn small() {\n    assert_eq!(capped_sum(1, 2), 3);\n}\n")
    at = len(CONTEXT.encode())
    tasks = [task().model_copy(update={"crate_spot": CrateSpot(root=str(root), path="src/lib.rs", start_byte=at,
                                                                 end_byte=at + len(REFERENCE))})]
    assert with_same_value_tests(tasks, rust_oracle) == 1
    wrong = REFERENCE.replace("        LIMIT\n", "        LIMIT - 1\n")
    got = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo")).judge(tasks, [f"```rust\n{wrong}\n```"])[0]
    assert got.solved and got.tests == 0.0 and not got.passed
    assert Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo")).judge(tasks, [f"```rust\n{REFERENCE}\n```"])[0].passed


def test_an_input_where_the_reference_panics_is_not_compared(rust_oracle):
    """A task's file may leave other functions' bodies out (`todo!()`): where the reference calls
    one it panics, and an answer that does that work itself is no wrong answer. A reference that
    panics on every input gets no tests."""
    stub = "fn big(n: u32) -> u32 {\n    todo!()\n}\n\n"
    some = "pub fn capped_sum(a: u32, b: u32) -> u32 {\n    if a > 50 {\n        big(a)\n    } else {\n        a + b\n    }\n}"
    every = "pub fn capped_sum(a: u32, b: u32) -> u32 {\n    big(a) + b\n}"
    tasks = [task(some).model_copy(update={"context": stub, "before": stub}),
             task(every).model_copy(update={"context": stub, "before": stub})]
    assert with_same_value_tests(tasks, rust_oracle) == 1 and tasks[0].tests and tasks[1].tests == ""
    inlined = some.replace("big(a)", "a * 2")  # its own work where the file has none
    wrong = some.replace("a + b\n", "a + b + 1\n")
    got = Judge({"rust": rust_oracle}).judge([tasks[0]] * 2, [f"```rust\n{a}\n```" for a in (inlined, wrong)])
    assert got[0].passed and not got[1].passed and got[1].tests == 0.0
