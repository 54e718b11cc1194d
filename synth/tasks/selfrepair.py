"""Self-repair tasks: a model's own failing answers to held-out codegen tasks, sent back with
rustc's errors (the repair prompt of compile-feedback turns, synth/tasks/feedback.py), as tasks of
their own (`family: "selfrepair"`). The mistakes are real ones a model made, not synth's mutants;
an answer is placed and judged as its codegen task's answer is (the judge reads the family as
codegen: the task asks for the same definition, in the same context).

Made from held-out tasks only, after the models answered them; nothing reads them for training
(the snapshot is built from rows, never from tasks files)."""
from __future__ import annotations

import json
from pathlib import Path

from oracles.errors import InputError
from oracles.factory import opened_oracles
from synth.rows.jsonl import write_jsonl
from synth.tasks.completion import answer_code, defines
from synth.tasks.feedback import feedback_task, sent_back
from synth.tasks.judge import Judge
from synth.tasks.task import Task, load_tasks


def first_answers(path: str | Path) -> dict[str, str]:
    """A model's first answer per task (`NAME.answers.jsonl` of `synth eval`: the first sample of
    the first turn)."""
    out: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if entry.get("turn", 1) == 1 and entry.get("sample", 0) == 0:
                out.setdefault(str(entry["id"]), str(entry["answer"]))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}:{number}: not an {{\"id\", \"answer\"}} line ({exc})") from exc
    return out


def selfrepair_tasks(tasks: list[Task], answers: dict[str, dict[str, str]], judge: Judge) -> tuple[list[Task], dict]:
    """Per codegen task and model (`answers`: model name -> task id -> its answer), the answer
    rustc rejects becomes a task: its own code as the broken declaration, rustc's errors in the
    prompt; an answer that does not define what was asked (prose, another item) is no attempt to
    repair. Two models' identical broken code is one task (`made_by` names both). Also the funnel
    per model: answers read, rejected with code, not an attempt, kept."""
    codegen = [t for t in tasks if t.family == "codegen"]
    pairs = [(task, model, answers[model][task.id]) for task in codegen for model in sorted(answers)
             if task.id in answers[model]]
    outcomes = judge.judge([t for t, _, _ in pairs], [a for _, _, a in pairs]) if pairs else []
    made: dict[tuple[str, str], Task] = {}
    funnel = {model: {"answers": 0, "rejected": 0, "not_an_attempt": 0, "kept": 0} for model in sorted(answers)}
    for (task, model, reply), result in zip(pairs, outcomes):
        code = answer_code(reply)
        funnel[model]["answers"] += 1
        if result.solved or not sent_back(code, result.verdict):
            continue  # it counts, or the compiler has nothing to say (no code; compiles but answers nothing)
        funnel[model]["rejected"] += 1
        if not defines(code, task.must_define):
            funnel[model]["not_an_attempt"] += 1  # prose, or another declaration: no broken version of this one
            continue
        key = (task.id, code)
        if key in made:
            made[key].made_by = f"{made[key].made_by},{model}"
            continue
        funnel[model]["kept"] += 1
        made[key] = feedback_task(task, code, result.verdict).model_copy(update={
            "id": f"{task.id}~selfrepair~{model}", "family": "selfrepair", "broken": code, "made_by": model})
    return list(made.values()), funnel


def write_selfrepair_tasks(tasks_path: str | Path, answers: dict[str, str | Path], oracle_settings,
                           out: str | Path) -> dict:
    """`synth selfrepair`: the self-repair tasks of the models whose answers (`NAME.answers.jsonl`
    per model name) answered the tasks of `tasks_path`, written to `out`; the funnel."""
    if not answers:
        raise InputError("selfrepair needs the answers of at least one model (--answers NAME=FILE)")
    for name, path in answers.items():
        if not Path(path).is_file():
            raise InputError(f"answers of {name!r}: {str(path)!r} not found (synth eval writes NAME.answers.jsonl)")
    tasks = load_tasks(tasks_path)
    with opened_oracles({t.lang for t in tasks}, any(t.in_crate for t in tasks), oracle_settings) as (oracles, crate):
        judge = Judge(oracles, crate)
        made, funnel = selfrepair_tasks(tasks, {name: first_answers(path) for name, path in answers.items()}, judge)
    write_jsonl(out, [t.model_dump() for t in made])
    return {"tasks": len(made), "by_model": funnel, "from": str(tasks_path), "out": str(out)}
