"""The compiler's help as the baseline a repair model must beat, on real rustc and cargo: every
suggestion rustc makes (`rustc_all`, MaybeIncorrect ones too, none with placeholders) and the
rules on its words (`compiler_words`, placeholders filled by type), each judged like a model,
standalone and in a crate."""
import pytest

from helpers.rust_tasks import repair_task
from oracles.cargo.crate import CargoCrateOracle
from oracles.verdict import Candidate
from synth.tasks.baselines import compiler_answers, in_declaration
from synth.tasks.judge import Judge
from synth.tasks.task import CrateSpot, Task

CONTEXT = "pub struct Stats {\n    pub count: u32,\n}\n\nfn len_of(s: &str) -> usize {\n    s.len()\n}\n\n"
CASES = {  # name: (original, broken): each a real mutant of one kind rustc words differently
    "similar local": ("pub fn twice(value: u32) -> u32 {\n    let doubled = value * 2;\n    doubled\n}",
                      "pub fn twice(value: u32) -> u32 {\n    let doubled = value * 2;\n    doubleds\n}"),
    "return type": ("pub fn size(s: &str) -> usize {\n    let n = len_of(s);\n    n\n}",
                    "pub fn size(s: &str) -> bool {\n    let n = len_of(s);\n    n\n}"),
    "mut": ("pub fn count() -> u32 {\n    let mut n = 0;\n    n += 1;\n    n\n}",
            "pub fn count() -> u32 {\n    let n = 0;\n    n += 1;\n    n\n}"),
    "field": ("pub fn read(s: &Stats) -> u32 {\n    s.count\n}", "pub fn read(s: &Stats) -> u32 {\n    s.counts\n}"),
    "import": ("pub fn keys() -> usize {\n    use std::collections::HashMap;\n    let m: HashMap<u32, u32> = HashMap::new();\n"
               "    m.len()\n}",
               "pub fn keys() -> usize {\n    let m: HashMap<u32, u32> = HashMap::new();\n    m.len()\n}"),
    "argument count": ("pub fn size2(s: &str) -> usize {\n    len_of(s) + s.len()\n}",
                       "pub fn size2(s: &str) -> usize {\n    len_of() + s.len()\n}"),
    "argument count, a binding of its type": ("pub fn size3(s: &str) -> usize {\n    len_of(s)\n}",
                                              "pub fn size3(s: &str) -> usize {\n    len_of()\n}"),
    # the argument dropped was all the function read of its inputs: a made-up value in its place reads none
    "argument count, the only input": ("pub fn size4(n: u32) -> usize {\n    len_of(&n.to_string())\n}",
                                       "pub fn size4(n: u32) -> usize {\n    len_of()\n}"),
}


def task(name: str, original: str, broken: str, before: str = CONTEXT) -> Task:
    return repair_task(name, original, broken, before)


def solved(tasks, answers, judge) -> dict[str, bool]:
    outcomes = judge.judge(tasks, [f"```rust\n{a}\n```" for a in answers])
    return {t.id: o.solved for t, o in zip(tasks, outcomes)}


def test_every_suggestion_and_the_rules_on_rustcs_words(rust_oracle):
    tasks = [task(name, *pair) for name, pair in CASES.items()]
    judge = Judge({"rust": rust_oracle})
    assert not any(o.compiled for o in judge.judge(tasks, [f"```rust\n{t.broken}\n```" for t in tasks]))
    every = solved(tasks, compiler_answers("rustc_all", tasks, judge), judge)
    words = solved(tasks, compiler_answers("compiler_words", tasks, judge), judge)
    machine = solved(tasks, compiler_answers("rustc", tasks, judge), judge)
    # rustc marks the similar name MaybeIncorrect: cargo fix leaves it, every suggestion takes it
    assert every["similar local"] and not machine["similar local"]
    assert every["mut"] and machine["mut"] and words["mut"]
    # the return type rustc found, and the import it suggests: only the rules put them in
    assert words["return type"] and not every["return type"]
    assert words["import"] and words["similar local"] and words["field"]
    # rustc's help has a placeholder: every suggestion leaves it, the rules fill it with a value of its type
    assert not every["argument count"] and words["argument count"]
    # the placeholder `/* &str */` filled with the one `&str` the code binds, as rust-analyzer fills arguments
    assert compiler_answers("compiler_words", [tasks[list(CASES).index("argument count, a binding of its type")]],
                            judge)[0] == CASES["argument count, a binding of its type"][0]
    assert not words["argument count, the only input"]  # cc's `Error::new(kind, "")` for `(kind, &format!("{}", e))`
    answer = compiler_answers("compiler_words", [tasks[list(CASES).index("argument count, the only input")]], judge)[0]
    assert 'len_of("")' in answer  # filled, and refused: it reads nothing of `n`
    # a model's own mistake (a self-repair task) gets the compiler's help as a mutant does; codegen none
    own = [t.model_copy(update={"family": "selfrepair"}) for t in tasks]
    assert solved(own, compiler_answers("compiler_words", own, judge), judge) == words
    assert compiler_answers("compiler_words", [t.model_copy(update={"family": "codegen"}) for t in tasks[:1]],
                            judge) == [None]


def test_a_placeholder_is_filled_with_a_value_of_the_type_it_names(rust_oracle):
    """What compiles without being the argument meant: `0`, `""`, `false`, `Default::default()`.
    A check without tests cannot tell it from the original, so it is what the compiler gives."""
    before = ("pub struct Pair(u32, String);\n\nfn weigh(a: u8, b: &str, c: bool, d: &Vec<u8>) -> usize {\n"
              "    a as usize + b.len() + c as usize + d.len()\n}\n\n")
    original = ("pub fn total() -> usize {\n    let p = Pair(1, String::from(\"x\"));\n"
                "    weigh(2, \"ab\", true, &vec![1]) + p.0 as usize\n}")
    broken = original.replace(', String::from("x")', "").replace(", true, &vec![1]", "")
    t = task("placeholders", original, broken, before)
    judge = Judge({"rust": rust_oracle})
    answer = compiler_answers("compiler_words", [t], judge)[0]
    assert "Pair(1, Default::default())" in answer and 'weigh(2, "ab", false, &Default::default())' in answer
    assert solved([t], [answer], judge) == {"placeholders": True}
    assert compiler_answers("rustc_all", [t], judge)[0] == broken  # none of rustc's own is without one


def test_a_literal_of_the_wrong_type_becomes_one_of_the_type_expected(rust_oracle):
    """`expected `usize`, found `&str`` under `"3"`: the number it spells; under `7` where a `&str`
    is expected, a value of that type (`""`: it compiles, the string meant is lost)."""
    original = 'pub fn label(n: usize) -> usize {\n    let s = "ab";\n    len_of(s) + n.pow(3) + len_of("cd")\n}'
    broken = original.replace("pow(3)", 'pow("3")').replace('len_of("cd")', "len_of(7)")
    t = task("literal", original, broken)
    judge = Judge({"rust": rust_oracle})
    answer = compiler_answers("compiler_words", [t], judge)[0]
    assert "n.pow(3)" in answer and 'len_of("")' in answer
    assert solved([t], [answer], judge) == {"literal": True}


def test_the_nearest_name_when_rustc_offers_none(rust_oracle):
    """`countt` is too far for rustc's own similar-name help; the rule finds the binding."""
    original = "pub fn tally(xs: &[u32]) -> usize {\n    let counted = xs.len();\n    counted\n}"
    broken = original.replace("    counted\n}", "    count_ed\n}")
    t = task("nearest", original, broken)
    judge = Judge({"rust": rust_oracle})
    verdict = rust_oracle.check([Candidate.of(t.source(broken))])[0]
    assert verdict.errors[0].code == "E0425"
    assert compiler_answers("compiler_words", [t], judge)[0] == original


def test_diagnostics_move_into_the_declarations_own_lines(rust_oracle):
    name, (original, broken) = "similar local", CASES["similar local"]
    t = task(name, original, broken)
    verdict = rust_oracle.check([Candidate.of(t.source(broken))])[0]
    (moved,) = in_declaration(t, broken, verdict.errors)
    assert (moved.line, moved.column) == (3, 5) and moved.fixes[0].edits[0][:2] == (3, 5)
    assert verdict.errors[0].line == CONTEXT.count("\n") + 3


@pytest.fixture(scope="module")
def crate(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    (root / "src").mkdir()
    (root / "Cargo.toml").write_text('[package]\nname = "stats"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    impl = "impl Stats {\n    " + CASES["similar local"][0].replace("\n", "\n    ") + "\n}\n"
    (root / "src" / "lib.rs").write_text(CONTEXT + impl)
    return root, CONTEXT + impl


def test_the_baselines_work_in_a_copy_of_the_crate(rust_oracle, crate):
    root, lib = crate
    original, broken = CASES["similar local"]
    method = original.replace("\n", "\n    ")  # as it sits in the impl, indented
    start = lib.encode().index(method.encode())
    spot = CrateSpot(root=str(root), path="src/lib.rs", start_byte=start, end_byte=start + len(method.encode()),
                     name="twice")
    t = task("crate", method, broken.replace("\n", "\n    ")).model_copy(
        update={"in_crate": spot, "before": "", "after": "", "kind": "method"})
    oracle = CargoCrateOracle(cache=None)
    try:
        judge = Judge({"rust": rust_oracle}, oracle)
        for kind in ("rustc_all", "compiler_words"):
            (answer,) = compiler_answers(kind, [t], judge)
            assert answer == method and judge.judge([t], [f"```rust\n{answer}\n```"])[0].solved, kind
    finally:
        oracle.close()


def test_eval_judges_answers_made_elsewhere_and_keeps_every_answer(tmp_path):
    """`synth eval --answers FILE`: one {"id", "answer"} a line; a task without one is left out and
    counted; every answer of every evaluation is kept beside its JSON, in the form FILE reads."""
    import json

    from oracles.settings import OracleSettings
    from synth.rows.jsonl import write_jsonl
    from training.evaluation.evaluate import answers_path, run_eval
    from training.run.profile import EvalSettings

    tasks = [task(name, *CASES[name]) for name in ("similar local", "mut", "field")]
    write_jsonl(tmp_path / "tasks.jsonl", [t.model_dump() for t in tasks])
    given = tmp_path / "mine.jsonl"
    given.write_text(json.dumps({"id": "similar local", "answer": CASES["similar local"][0]}) + "\n" +
                     json.dumps({"id": "mut", "answer": "```rust\n" + CASES["mut"][1] + "\n```"}) + "\n")
    out = tmp_path / "eval" / "mine.json"
    result = run_eval(EvalSettings(), None, None, OracleSettings(), out, tasks_path=str(tmp_path / "tasks.jsonl"),
                      answers=str(given))
    assert result["not_applicable"] == 1 and sorted(result["per_task"]) == ["mut", "similar local"]
    assert result["per_task"]["similar local"]["solved"] == 1.0 and result["per_task"]["mut"]["solved"] == 0.0
    kept = [json.loads(line) for line in answers_path(out).read_text().splitlines()]
    assert [(k["id"], k["solved"]) for k in kept] == [("similar local", True), ("mut", False)]
    again = run_eval(EvalSettings(), None, None, OracleSettings(), tmp_path / "again.json",
                     tasks_path=str(tmp_path / "tasks.jsonl"), answers=str(answers_path(out)))
    assert again["per_task"] == result["per_task"]  # the kept answers judge the same
    free = run_eval(EvalSettings(), None, None, OracleSettings(), tmp_path / "free.json",
                    tasks_path=str(tmp_path / "tasks.jsonl"), answers="best_free")
    assert free["families"]["repair"]["compile_rate"] == 1.0  # each of the three is one rustc words
    given.write_text('{"id": "mut"}\n')
    with pytest.raises(ValueError, match="mine.jsonl:1"):
        run_eval(EvalSettings(), None, None, OracleSettings(), tmp_path / "bad.json", tasks_path=str(tmp_path / "tasks.jsonl"),
                 answers=str(given))
