"""Self-repair tasks (`synth selfrepair`): a model's own answer to a held-out codegen task that
real rustc rejects becomes a task with rustc's errors in its prompt, judged like its codegen task;
an answer that counts, or has no code, makes none; two models' identical mistakes are one task
naming both; and nothing trains on them."""
import json

import pytest

from synth.cli.main import main
from synth.tasks.judge import Judge
from synth.tasks.selfrepair import selfrepair_tasks
from synth.tasks.task import Task
from training.evaluation.evaluate import evaluate
from training.run.profile import EvalSettings
from helpers.replies import fenced

CONTEXT = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n"
FIXED = "pub fn size(s: &str) -> usize {\n    let n = len_of(s);\n    n\n}"
BROKEN = "pub fn size(s: &str) -> usize {\n    let n = len_of();\n    n\n}"  # E0061
WRONG_TYPE = "pub fn size(s: &str) -> usize {\n    let n: bool = len_of(s);\n    n\n}"  # E0308


def codegen(name: str) -> Task:
    return Task(id=name, lang="rust", prompt=f"Write `size` ({name}).", context=CONTEXT, must_define=["fn size"],
                reference=FIXED, crate="heldout-crate", group=f"g-{name}")



ANSWERS = {"base": {"a": fenced(BROKEN), "b": fenced(FIXED), "c": "I cannot write that."},
           "sft": {"a": fenced(BROKEN), "b": fenced(WRONG_TYPE), "c": fenced(FIXED)}}


def test_rejected_answers_become_tasks_with_rustcs_errors(rust_oracle):
    tasks = [codegen(n) for n in "abc"] + [Task(id="r", lang="rust", family="repair", prompt="fix", broken=BROKEN)]
    made, funnel = selfrepair_tasks(tasks, {**ANSWERS, "sft": {**ANSWERS["sft"], "r": fenced(BROKEN)}},
                                    Judge({"rust": rust_oracle}))
    by_id = {t.id: t for t in made}
    assert sorted(by_id) == ["a~selfrepair~base", "b~selfrepair~sft"]  # one task for the shared mistake; none for r
    shared, own = by_id["a~selfrepair~base"], by_id["b~selfrepair~sft"]
    assert shared.made_by == "base,sft" and own.made_by == "sft"
    assert shared.family == own.family == "selfrepair" and shared.broken == BROKEN and own.broken == WRONG_TYPE
    assert "error[E0061]" in shared.prompt and BROKEN in shared.prompt and CONTEXT.strip() in shared.prompt
    assert "error[E0308]" in own.prompt and WRONG_TYPE in own.prompt
    assert shared.crate == "heldout-crate" and shared.must_define == ["fn size"] and shared.reference == FIXED
    assert funnel == {"base": {"answers": 3, "rejected": 2, "not_an_attempt": 1, "kept": 1},
                      "sft": {"answers": 3, "rejected": 2, "not_an_attempt": 0, "kept": 1}}  # c: prose, then right


def test_a_selfrepair_task_is_judged_like_its_codegen_task(rust_oracle, tmp_path):
    judge = Judge({"rust": rust_oracle})
    made, _ = selfrepair_tasks([codegen("a")], {"base": {"a": fenced(BROKEN)}}, judge)
    replies = {"right": fenced(FIXED), "same": fenced(BROKEN), "other": fenced("pub fn other() {}")}
    tasks = [made[0].model_copy(update={"id": name}) for name in replies]
    result = evaluate(EvalSettings(decoding="greedy", k=1, samples=1), lambda ts, k=None: [[replies[t.id]] for t in ts],
                      judge, tasks, "scripted")
    assert {t: p["solved"] for t, p in result["per_task"].items()} == {"right": 1.0, "same": 0.0, "other": 0.0}
    assert result["families"]["selfrepair"]["compile_rate"] == round(1 / 3, 4) and "codegen" not in result["families"]
    from benchmarks.loop_bench import selfrepair_figures  # what the loop reports of it
    written = tmp_path / "selfrepair.jsonl"
    written.write_text("".join(json.dumps({**t.model_dump(), "made_by": "base"}) + "\n" for t in tasks))
    figures = selfrepair_figures({"selfrepair_base": result, "selfrepair_sft": result}, written, seed=0)
    assert figures["heldout_tasks"] == 3 and figures["made_by"] == {"base": 3} and figures["best_free"] is None
    assert selfrepair_figures({"selfrepair_base": result, "selfrepair_sft": result, "selfrepair_best_free": result},
                              written, seed=0)["best_free"] == round(1 / 3, 4)
    assert figures["sft"]["compile_rate"] == round(1 / 3, 4) and figures["sft_vs_base"]["compile_rate"]["delta"] == 0
    third = round(1 / 3, 4)  # every model on the tasks made of base's mistakes
    assert figures["on_own_mistakes"]["base"] == {"tasks": 3, "base": third, "sft": third, "grpo": third}


def test_synth_selfrepair_writes_the_tasks_and_names_bad_input(tmp_path, capsys):
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_text("".join(json.dumps(codegen(n).model_dump()) + "\n" for n in "abc"))
    answers = {}
    for model, given in ANSWERS.items():
        answers[model] = tmp_path / f"{model}.answers.jsonl"
        lines = [{"id": i, "sample": 0, "answer": a} for i, a in given.items()]
        lines.insert(0, {"id": "c", "sample": 0, "turn": 2, "answer": fenced(BROKEN)})  # a later turn is not its answer
        answers[model].write_text("".join(json.dumps(line) + "\n" for line in lines))
    profile = tmp_path / "profile.toml"
    profile.write_text('model = "none"\n')
    out = tmp_path / "selfrepair.jsonl"
    argv = ["selfrepair", "--profile", str(profile), "--tasks", str(heldout), "--out", str(out), "--json",
            "--answers", f"base={answers['base']}", "--answers", f"sft={answers['sft']}"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    written = [Task(**json.loads(line)) for line in out.read_text().splitlines()]
    assert printed["tasks"] == len(written) == 2 and {t.made_by for t in written} == {"base,sft", "sft"}
    missing = [a if not a.startswith("sft=") else "sft=" + str(tmp_path / "nope.jsonl") for a in argv]
    assert main(missing) == 2
    assert "nope.jsonl" in capsys.readouterr().err and len(out.read_text().splitlines()) == 2  # nothing lost


def test_training_refuses_selfrepair_tasks(tmp_path):
    from oracles.errors import InputError
    from training.grpo import refuse_heldout_mistakes
    refuse_heldout_mistakes([codegen("a")], "rl.jsonl")  # RL tasks of the training crates pass
    with pytest.raises(InputError, match="selfrepair"):
        refuse_heldout_mistakes([codegen("a"), codegen("b").model_copy(update={"family": "selfrepair"})], "x.jsonl")
