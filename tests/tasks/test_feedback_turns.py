"""Compile-feedback turns (`synth eval --turns N`): an attempt rustc rejects goes back with rustc's
errors, placed in the declaration as a repair prompt shows them, for another answer, judged like
the first on real rustc; what each turn adds is reported per family and per task, and every
turn's answers are kept."""
import json

import pytest

from synth.tasks.feedback import feedback_prompt
from synth.tasks.judge import Judge
from synth.tasks.task import Task
from training.evaluation.evaluate import evaluate, file_answers
from training.run.profile import EvalSettings

CONTEXT = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n"
FIXED = "pub fn size(s: &str) -> usize {\n    let n = len_of(s);\n    n\n}"
BROKEN = "pub fn size(s: &str) -> usize {\n    let n = len_of();\n    n\n}"  # E0061, on its line 2


def codegen(name: str) -> Task:
    return Task(id=name, lang="rust", prompt=f"Write `size` ({name}).", context=CONTEXT, must_define=["fn size"],
                reference=FIXED)


class Model:
    """Stands in for the model: `fixes` answers right after seeing rustc's error, `right` at once,
    `stuck` never; it records the prompts it was sent."""
    name = "scripted"

    def __init__(self):
        self.prompts = []

    def __call__(self, tasks, k=None):
        self.prompts += [t.prompt for t in tasks]
        out = []
        for t in tasks:
            feedback = "The compiler says:" in t.prompt
            right = "right" in t.id or (t.id == "fixes" and feedback)
            out.append([OTHER.get(t.id) or f"```rust\n{FIXED if right else BROKEN}\n```"])
        return out


# Failing answers that are no attempt at `size`: prose (the base model's usual reply), another item
OTHER = {"prose": "The compiler will not compile this code.\n\nThe compiler will not compile this code.",
         "other": "```rust\nfn other() -> usize {\n    len_of()\n}\n```"}


def test_a_rejected_answer_goes_back_with_rustcs_error_placed_in_it(rust_oracle):
    task = codegen("fixes")
    verdict = rust_oracle.check([__import__("oracles.verdict", fromlist=["Candidate"]).Candidate.of(task.source(BROKEN))])[0]
    prompt = feedback_prompt(task, BROKEN, verdict)
    assert "error[E0061]" in prompt and BROKEN in prompt and CONTEXT.strip() in prompt
    assert "--> line 2," in prompt and "len_of();" in prompt.split("--> line 2,")[1]  # its own line, not the file's


@pytest.mark.parametrize("turns", [2, 3])
def test_turns_report_what_each_adds_and_keep_every_answer(tmp_path, rust_oracle, turns):
    tasks = [codegen(n) for n in ("fixes", "right", "stuck")]
    model, judge = Model(), Judge({"rust": rust_oracle})
    settings = EvalSettings(decoding="greedy", k=1, samples=1, turns=turns)
    result = evaluate(settings, model, judge, tasks, model.name)
    assert result["families"]["codegen"]["turns"] == [round(1 / 3, 4)] + [round(2 / 3, 4)] * (turns - 1)
    assert result["families"]["codegen"]["compile_rate"] == round(1 / 3, 4)  # the first turn's, as without turns
    assert result["per_task"]["fixes"]["solved_by_turn"] == [0.0] + [1.0] * (turns - 1)
    assert result["per_task"]["stuck"]["solved_by_turn"] == [0.0] * turns
    feedback = [p for p in model.prompts if "The compiler says:" in p]
    assert len(feedback) == 2 + (turns - 2)  # fixes and stuck at turn 2, then stuck alone
    later = [(a["id"], a["turn"], a["solved"]) for a in result["answers"] if a.get("turn", 1) > 1]
    assert later[:2] == [("fixes", 2, True), ("stuck", 2, False)] and len(later) == len(feedback)
    from benchmarks.loop_commands import turn_gain
    gain = turn_gain(result, "codegen", seed=0)  # what the loop reports: last turn - first, paired by task
    assert gain["delta"] == pytest.approx(1 / 3, abs=1e-4) and gain["ci95"][0] <= gain["delta"] <= gain["ci95"][1]
    kept = tmp_path / "kept.jsonl"
    kept.write_text("".join(json.dumps(a) + "\n" for a in result["answers"]))
    assert file_answers(kept)(tasks) == [[f"```rust\n{BROKEN}\n```"], [f"```rust\n{FIXED}\n```"],
                                         [f"```rust\n{BROKEN}\n```"]]  # a later turn is no extra sample


def test_only_an_attempt_gets_another_turn(rust_oracle):
    tasks = [codegen(n) for n in ("fixes", "prose", "other")]
    model = Model()
    result = evaluate(EvalSettings(decoding="greedy", k=1, samples=1, turns=2), model, Judge({"rust": rust_oracle}),
                      tasks, model.name)
    assert not any(result["per_task"][n]["solved"] for n in ("prose", "other"))  # both rejected at turn 1
    feedback = [p for p in model.prompts if "The compiler says:" in p]
    assert len(feedback) == 1 and BROKEN in feedback[0]  # the attempt went back; prose and `fn other` did not
    assert result["families"]["codegen"]["turns"] == [0.0, round(1 / 3, 4)]


def test_one_turn_is_the_evaluation_as_it_was(rust_oracle):
    tasks = [codegen(n) for n in ("fixes", "right")]
    result = evaluate(EvalSettings(decoding="greedy", k=1, samples=1), Model(), Judge({"rust": rust_oracle}), tasks, "m")
    assert "turns" not in result["families"]["codegen"] and "solved_by_turn" not in result["per_task"]["fixes"]
    assert all("turn" not in a for a in result["answers"])


def test_answers_made_elsewhere_get_one_turn(tmp_path):
    """A baseline or a file of answers has nothing to say to the compiler's errors: with the
    profile's turns > 1 it is judged once, as without turns (the loop evaluates its baselines so)."""
    from oracles.settings import OracleSettings
    from synth.rows.jsonl import write_jsonl
    from training.evaluation.evaluate import run_eval
    write_jsonl(tmp_path / "tasks.jsonl", [codegen("fixes").model_dump()])
    result = run_eval(EvalSettings(turns=2), None, None, OracleSettings(), tmp_path / "e.json",
                      tasks_path=str(tmp_path / "tasks.jsonl"), answers="reference")
    assert result["settings"]["turns"] == 1 and "turns" not in result["families"]["codegen"]
    assert result["families"]["codegen"]["compile_rate"] == 1.0


def test_a_model_after_the_compilers_help_repairs_what_it_leaves(tmp_path, rust_oracle):
    """`synth eval --after best_free`: the compiler's fix stands where it counts and the model is not
    asked; where it fixed one error of two, the model gets the fixed code with the error left; where
    it changed nothing, the model gets the task itself; and the compiler's help mends the model's
    answer in turn (real rustc, a scripted model)."""
    from training.evaluation.after_baseline import after_baseline
    from training.evaluation.evaluate import baseline_answers

    def repair_task(name: str, original: str, broken: str) -> Task:
        return Task(id=name, lang="rust", family="repair", prompt=f"fix {name}", must_define=["fn both"],
                    reference=original, broken=broken, signature=original.split(" {")[0], kind="fn",
                    before=CONTEXT + "\n", after="\n")
    original = "pub fn both(s: &str) -> usize {\n    let total = len_of(s);\n    total\n}"
    tasks = [repair_task("named", original, original.replace("    total\n}", "    totals\n}")),
             repair_task("two", original, original.replace("len_of(s)", "len_of(s.len())").replace("    total\n}", "    totals\n}")),
             repair_task("count", original, original.replace("len_of(s)", "len_of(s.len())"))]  # rustc suggests nothing
    judge = Judge({"rust": rust_oracle})
    asked = []

    def model(batch, k=None):  # right on "two"; on "count", right but for a name rustc's help mends
        asked.extend(batch)
        return [[f"```rust\n{original if t.id == 'two' else original.replace('    total', '    totals')}\n```"]
                for t in batch]
    start = after_baseline(baseline_answers("best_free", judge), model, judge)
    result = evaluate(EvalSettings(decoding="greedy", k=1, samples=1), model, judge, tasks, "m after", start)
    assert [t.id for t in asked] == ["two", "count"]  # the name alone is the compiler's: no model call
    two, count = asked
    assert "The compiler says:" in two.prompt and "let total = len_of(s.len());" in two.prompt and "totals" not in two.prompt
    assert "error[E0308]" in two.prompt and "E0425" not in two.prompt  # the error the compiler's fix left
    assert count.prompt == tasks[2].prompt  # it changed nothing: the task as it is
    assert result["helped"] == {"baseline": 1, "after model": 1} and result["families"]["repair"]["compile_rate"] == 1.0
    assert {a["id"]: a.get("helped") for a in result["answers"]} == {"named": "baseline", "two": None,
                                                                      "count": "after model"}
    from benchmarks.loop_bench import after_compiler  # what the loop reports of it
    settings = EvalSettings(decoding="greedy", k=1, samples=1)
    free = evaluate(settings, baseline_answers("best_free", judge), judge, tasks, "best_free")
    figures = after_compiler({"base": free, "best_free": free, "sft_after_free": result}, "repair", seed=0)
    assert figures["best_free"] == round(1 / 3, 4) and figures["sft"] == 1.0
    assert figures["sft_vs_best_free"]["compile_rate"]["delta"] == pytest.approx(2 / 3, abs=1e-4)
    assert figures["beyond_compiler"] == {"tasks": 2, "sft": 1.0, "grpo": 1.0}


def test_a_compiler_guess_that_fails_with_an_error_of_its_own_leaves_the_model_the_task(rust_oracle):
    """best_free fills rustc's placeholder for a missing argument with `Default::default()`; where the
    type has no default, that adds an error of its own (E0277): the model gets the task as it was,
    not the guess."""
    from training.evaluation.after_baseline import after_baseline
    from training.evaluation.evaluate import baseline_answers
    token = "pub struct Token(u8);\n\nfn tagged(s: &str, _t: Token) -> usize {\n    s.len()\n}\n\n"
    original = "pub fn tag(s: &str) -> usize {\n    tagged(s, Token(1))\n}"
    task = Task(id="guess", lang="rust", family="repair", prompt="fix guess", must_define=["fn tag"],
                reference=original, broken=original.replace("tagged(s, Token(1))", "tagged(s)"),
                signature="pub fn tag(s: &str) -> usize", kind="fn", before=CONTEXT + "\n" + token, after="\n")
    judge = Judge({"rust": rust_oracle})
    guess = baseline_answers("best_free", judge)([task])[0][0]
    assert "tagged(s, Default::default())" in guess and not judge.judge([task], [guess])[0].solved
    asked = []

    def model(batch, k=None):
        asked.extend(batch)
        return [[f"```rust\n{original}\n```"] for _ in batch]
    answers, helped = after_baseline(baseline_answers("best_free", judge), model, judge)([task])
    assert [t.prompt for t in asked] == ["fix guess"] and helped == {}
    assert judge.judge([task], answers[0])[0].solved
