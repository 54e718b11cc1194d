"""`synth bench judge`'s attacks are what they say, and on real rustc none of them counts on a
task where each applies, while the controls do: the bench's figures rest on these answers."""
from benchmarks.judge_bench import (attacks, both_diverge, changed_literal, controls, erased, requalified,
                                    stand_in_body, swapped_operator)
from synth.tasks.judge import Judge
from synth.tasks.task import Task

CONTEXT = "pub struct Meters(pub u32);\n\n"
REFERENCE = "pub fn total(xs: &[u32]) -> u32 {\n    let mut sum = 0;\n    for x in xs {\n        sum += x;\n    }\n    sum\n}"
BROKEN = REFERENCE.replace("sum += x;", "sum += y;")  # E0425
FILLED = REFERENCE.replace("sum += x;", "sum += Default::default();")  # best_free's guess for a placeholder


def test_the_attacks_change_what_they_say():
    assert stand_in_body(REFERENCE, "loop {}") == "pub fn total(xs: &[u32]) -> u32 {\n    loop {}\n}"
    assert stand_in_body("impl Meters {\n    fn f(&self) {}\n}", "loop {}") == "impl Meters {\n    fn f(&self) {\n    loop {}\n}\n}"
    assert stand_in_body("impl Meters {\n    fn f(&self) {}\n    fn g(&self) {}\n}", "loop {}") is None  # two
    assert erased(BROKEN, REFERENCE, "/* {} */") == BROKEN.replace("sum += y;", "/* sum += y; */")
    assert requalified(REFERENCE, "pub fn total(xs: &[u32]) -> u32", "pub ", "") == REFERENCE.removeprefix("pub ")
    assert requalified(REFERENCE, "pub fn total(xs: &[u32]) -> u32", "unsafe ", "") is None
    got = attacks(task(), FILLED)
    assert got["value: abort filler"] == REFERENCE.replace("sum += x;", "sum += std::process::abort();")
    assert got["signature: unsafe fn -> fn"] is None and attacks(task(), None)["value: todo filler"] is None
    codegen = attacks(task().model_copy(update={"family": "codegen"}), None)
    assert codegen["codegen signature: another, a body that works"] == "fn total() {\n    let _x = 1 + 1;\n}"
    assert "erasure: // line" not in codegen
    assert changed_literal(REFERENCE) == REFERENCE.replace("sum = 0;", "sum = 1;")
    assert swapped_operator(REFERENCE) is None  # `+=` is an assignment, not an operator of a value
    assert swapped_operator("fn f(a: u8) -> bool {\n    a < 3 && a > 0\n}") == "fn f(a: u8) -> bool {\n    a < 3 || a > 0\n}"


def test_no_attack_counts_and_the_controls_do(rust_oracle):
    t = task()
    answers = {name: a for name, a in {**attacks(t, FILLED), **controls(t)}.items() if a is not None}
    got = dict(zip(answers, Judge({"rust": rust_oracle}).judge([t] * len(answers),
                                                               [f"```rust\n{a}\n```" for a in answers.values()])))
    counted = sorted(name for name, o in got.items() if o.passed and not o.exact)
    # a wrong value compiles and reads as a fix: only tests tell (tests/tasks/test_crate_tests.py)
    assert counted == ["control: reference with a no-op", "wrong value: a literal changed"], counted
    assert got["control: reference"].passed
    assert got["body: abort"].compiled and got["erasure: /* line */"].compiled  # refused, not broken


def test_a_stand_in_that_diverges_as_the_reference_does_is_not_fooling():
    """compiler_builtins' `fn zero_div() -> ! { zero_div_fn() }`: any body that diverges is as good."""
    diverging = task().model_copy(update={"reference": "pub fn fail() -> ! {\n    stop()\n}",
                                          "context": "fn stop() -> ! {\n    loop {}\n}\n\n"})
    aborts = stand_in_body(diverging.reference, "std::process::abort()")
    assert both_diverge(diverging, aborts)
    assert not both_diverge(task(), stand_in_body(REFERENCE, "std::process::abort()"))  # its reference returns
    assert both_diverge(diverging, stand_in_body(diverging.reference, "unsafe { std::mem::zeroed() }"))  # a `!`
    returning = diverging.model_copy(update={"reference": "pub fn fail() -> u32 {\n    stop()\n}"})
    assert not both_diverge(returning, stand_in_body(returning.reference, "0"))


def task() -> Task:
    return Task(id="t", lang="rust", family="repair", prompt="fix", reference=REFERENCE, broken=BROKEN,
                signature="pub fn total(xs: &[u32]) -> u32", must_define=["fn total"], context=CONTEXT,
                before=CONTEXT, after="\n")
