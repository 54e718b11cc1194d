"""`free_search`: the compiler's help tried every way its words allow, rustc picking (the free
counterpart of a model sampled k times), on real rustc."""
from synth.tasks.baselines import best_free
from synth.tasks.baselines.compiler_words import in_order
from synth.tasks.baselines.search import free_search
from synth.tasks.judge import Judge
from helpers.rust_tasks import repair_task as task

BEFORE = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n\n"


def test_the_combinations_come_likeliest_first():
    assert list(in_order([2, 3], 10)) == [(0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (1, 2)]
    assert list(in_order([4, 4], 3)) == [(0, 0), (0, 1), (1, 0)]
    assert list(in_order([3, 0], 5)) == []  # an error with no option: no combination


def test_a_placeholder_tried_with_each_name_the_code_binds(rust_oracle):
    """Two `&str` bindings: the rules fill rustc's `/* &str */` with `""` (which binding is meant
    they cannot tell), a fill that reads no input and is refused; the search tries each binding
    and rustc picks one, as it picks among a model's samples. Without tests no judge can tell
    `len_of(a)` from the original `len_of(b)`: the search counts where best_free does not."""
    original = "pub fn second(a: &str, b: &str) -> usize {\n    len_of(b)\n}"
    broken = original.replace("len_of(b)", "len_of()")
    lone = "pub fn only(n: u32) -> usize {\n    len_of(&n.to_string())\n}"
    tasks = [task("two bindings", original, broken, BEFORE), task("no binding", lone, lone.replace(
        "len_of(&n.to_string())", "len_of()"), BEFORE)]
    judge = Judge({"rust": rust_oracle})
    free, solvable = best_free(tasks, judge)
    assert solvable == [False, False] and 'len_of("")' in free[0]
    tries = free_search(tasks, judge)
    assert tries[0][0] == free[0]  # best_free's own answer first
    assert {"len_of(a)", "len_of(b)"} <= {a.split("\n")[1].strip() for a in tries[0]}
    outcomes = judge.judge([tasks[0]] * len(tries[0]), [f"```rust\n{a}\n```" for a in tries[0]])
    assert [o.solved for o in outcomes][0] is False and any(o.solved for o in outcomes)
    # a value the code does not hold (`&n.to_string()`) is out of the search's reach: no try counts
    lone_outcomes = judge.judge([tasks[1]] * len(tries[1]), [f"```rust\n{a}\n```" for a in tries[1]])
    assert not any(o.solved for o in lone_outcomes)
    assert free_search([t.model_copy(update={"family": "codegen"}) for t in tasks[:1]], judge) == [None]


def test_eval_picks_among_the_searchs_answers_as_among_a_models_samples(tmp_path):
    """`synth eval --answers free_search`: the tries judged and the first that counts picked
    (`--pick compiled` whatever the profile says), the others kept in the answers file."""
    import json

    from oracles.settings import OracleSettings
    from synth.rows.jsonl import write_jsonl
    from training.evaluation.evaluate import answers_path, run_eval
    from training.run.profile import EvalSettings

    original = "pub fn second(a: &str, b: &str) -> usize {\n    len_of(b)\n}"
    write_jsonl(tmp_path / "tasks.jsonl", [task("two", original, original.replace("len_of(b)", "len_of()"),
                                                BEFORE).model_dump()])
    out = tmp_path / "search.json"
    result = run_eval(EvalSettings(), None, None, OracleSettings(), out, tasks_path=str(tmp_path / "tasks.jsonl"),
                      answers="free_search")
    assert result["settings"]["pick"] == "compiled" and result["per_task"]["two"]["solved"] == 1.0
    assert result["per_task"]["two"]["picked"] > 0  # best_free's own answer (first) is refused
    kept = [json.loads(line) for line in answers_path(out).read_text().splitlines()]
    assert len(kept) > 2 and sum(k.get("picked") is True for k in kept) == 1
    free = run_eval(EvalSettings(), None, None, OracleSettings(), tmp_path / "free.json",
                    tasks_path=str(tmp_path / "tasks.jsonl"), answers="best_free")
    assert free["per_task"]["two"]["solved"] == 0.0


def test_a_model_after_the_search_starts_from_its_answer_that_counts(rust_oracle):
    """`synth eval --after free_search`: where a later try of the search counts, it stands and the
    model is not asked; where none does, the model answers and the search mends its answer in turn
    (the first of its tries that counts), as best_free mends it with one."""
    from training.evaluation.after_baseline import after_baseline
    from training.evaluation.evaluate import baseline_answers

    original = "pub fn second(a: &str, b: &str) -> usize {\n    len_of(b)\n}"
    searched = task("searched", original, original.replace("len_of(b)", "len_of()"), BEFORE)
    mended = task("mended", original, original.replace("len_of(b)", "len_ofx(b, 1)"), BEFORE)
    judge = Judge({"rust": rust_oracle})
    asked = []

    def model(batch, k=None):  # the right name, the argument left out: the search fills it
        asked.extend(batch)
        return [[f"```rust\n{original.replace('len_of(b)', 'len_of()')}\n```"] for _ in batch]
    answers, helped = after_baseline(baseline_answers("free_search", judge), model, judge)([searched, mended])
    assert [t.id for t in asked] == ["mended"]
    assert helped == {"searched": "baseline", "mended": "after model"}
    assert [o.solved for o in judge.judge([searched, mended], [answers[0][0], answers[1][0]])] == [True, True]
    answers, helped = after_baseline(baseline_answers("best_free", judge), model, judge)([searched, mended])
    assert helped == {} and not any(o.solved for o in judge.judge([searched, mended], [answers[0][0], answers[1][0]]))
