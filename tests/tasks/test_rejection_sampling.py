"""Rejection sampling at evaluation (`synth eval --pick compiled`), on real rustc: of a task's
samples the answer is the first that rustc accepts and that a user can see is real without the
reference answer; what a perfect picker would get is reported beside it."""
import json

from oracles.settings import OracleSettings
from synth.rows.jsonl import write_jsonl
from synth.tasks.task import Task
from training.evaluation.evaluate import answers_path, run_eval
from training.run.profile import EvalSettings

TWICE = "pub fn twice(value: u32) -> u32 {\n    value * 2\n}"
SIZE = "pub fn size(s: &str) -> usize {\n    s.len()\n}"


def task(name: str, original: str, broken: str) -> Task:
    return Task(id=name, lang="rust", family="repair", prompt="fix", must_define=[f"fn {name}"], reference=original,
                broken=broken, signature=original.split(" {")[0], kind="fn", before="", after="\n")


def test_the_compiler_picks_the_first_sample_a_user_can_trust(tmp_path):
    tasks = [task("twice", TWICE, TWICE.replace("value *", "valu *")),
             task("size", SIZE, SIZE.replace("usize", "bool"))]
    write_jsonl(tmp_path / "tasks.jsonl", [t.model_dump() for t in tasks])
    samples = [("twice", tasks[0].broken),  # rustc rejects it
               ("twice", TWICE.replace("value * 2", "loop {}")),  # compiles, hollow: a user sees it
               ("twice", TWICE),
               ("twice", TWICE.replace("* 2", "* 2u8")),  # rejected again
               ("size", SIZE.replace("usize", "u64").replace("s.len()", "s.len() as u64")),  # another signature:
               ("size", SIZE)]  # only the reference shows it, so the picker keeps the first
    given = tmp_path / "samples.jsonl"
    given.write_text("".join(json.dumps({"id": i, "answer": f"```rust\n{a}\n```"}) + "\n" for i, a in samples))
    every = run_eval(EvalSettings(), None, None, OracleSettings(), tmp_path / "all.json",
                     tasks_path=str(tmp_path / "tasks.jsonl"), answers=str(given))
    assert every["families"]["repair"]["compile_rate"] == round((1 / 4 + 1 / 2) / 2, 4)
    out = tmp_path / "picked.json"
    picked = run_eval(EvalSettings(pick="compiled"), None, None, OracleSettings(), out,
                      tasks_path=str(tmp_path / "tasks.jsonl"), answers=str(given))
    twice, size = picked["per_task"]["twice"], picked["per_task"]["size"]
    assert (twice["picked"], twice["solved"], size["picked"], size["solved"]) == (2, 1.0, 0, 0.0)
    assert size["failures"] == ["compiles, signature"]
    repair = picked["families"]["repair"]
    assert (repair["compile_rate"], repair["any_sample_rate"], picked["summary"]["samples"]) == (0.5, 1.0, 2)
    assert repair["picked_by_samples"] == {"1": 0.0, "2": 0.0, "4": 0.5}  # the pick of the first 1, 2, 4 samples
    kept = [json.loads(line) for line in answers_path(out).read_text().splitlines()]
    assert [(k["id"], k["sample"], k["picked"]) for k in kept] == [
        ("twice", 0, False), ("twice", 1, False), ("twice", 2, True), ("twice", 3, False),
        ("size", 0, True), ("size", 1, False)]
    again = run_eval(EvalSettings(pick="compiled"), None, None, OracleSettings(), tmp_path / "again.json",
                     tasks_path=str(tmp_path / "tasks.jsonl"), answers=str(answers_path(out)))
    assert again["per_task"] == picked["per_task"]  # the kept samples, read back, are picked alike
