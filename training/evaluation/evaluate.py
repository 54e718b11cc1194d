"""`synth eval`: answers to held-out tasks, judged by the compiler (synth/tasks/judge/), with results
per task family (codegen, repair, selfrepair) and an optional regression gate against a baseline evaluation.

Who answers: a local model (training/evaluation/model_answers.py: greedy, one deterministic answer per
task, or `samples` sampled answers per task; prompts batched, a completion stops once its first
fenced block closes), a baseline that needs no model (synth/tasks/baselines/: the broken code unchanged, rustc's fixes, the
rules on rustc's words, `best_free`: the better of those two per task; `free_search`: up to 8 of
the ways its words allow, the compiler picking), or answers made elsewhere
(a JSONL file of `{"id", "answer"}` lines; tasks with none are left out, in `not_applicable`), or a
model after a baseline (`after`: the baseline's answer stands where it counts; elsewhere the model
repairs what the baseline left, as a compile-feedback turn: what a user who runs the compiler's
fixes first and then the model gets).
Every answer is kept beside the result (`NAME.answers.jsonl`, one `{"id", "answer", ...}` a line,
which `--answers` reads back).
With `shots`, each prompt is preceded by worked examples of its family (a task and its reference
answer from `examples`). Per family: the share of answers that count (`compile_rate`: compiles,
defines what was asked, keeps a repair's signature, not hollow), pass@1 (tests too) and pass@k,
the failures by the compiler's first error code, and for repair how often the answer restores
the original exactly and how often it compiles only because the erroring lines are gone. The gate
is a paired bootstrap over tasks, resampling answer groups (a declaration's tasks move together)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from oracles.errors import InputError
from oracles.factory import crate_tests_oracle, opened_oracles
from synth.tasks.baselines import BASELINES, COMPILER_BASELINES, best_free, compiler_answers, fenced
from synth.tasks.baselines.search import free_search
from synth.tasks.completion import answer_code
from synth.tasks.feedback import feedback_task, worth_a_turn
from synth.rows.jsonl import write_json, write_jsonl
from synth.tasks.judge import Judge, Outcome
from synth.tasks.passk import compare_results, pass_at_k
from synth.tasks.task import FAMILIES, Task, load_tasks

from training.evaluation.after_baseline import after_baseline
from training.data.dataset import fingerprint
from training.evaluation.draws import draw_path, draw_seed, draws_summary
from training.evaluation.model_answers import ModelAnswers
from training.run.profile import EvalSettings

KEPT_SAMPLES = 3  # completions shown in the result per family (all are in NAME.answers.jsonl)


FREE_KINDS = (*BASELINES, *COMPILER_BASELINES, "best_free", "free_search")


def baseline_answers(kind: str, judge: Judge):
    """Answers of a baseline that needs no model; None where it does not apply (`free_search`:
    several a task, for the compiler to pick from)."""
    if kind not in FREE_KINDS:
        raise InputError(f"unknown baseline {kind!r}: one of {sorted(FREE_KINDS)} or a JSONL file of answers")

    def answer(tasks: list[Task]) -> list[list[str] | None]:
        if kind == "free_search":
            return [None if a is None else [fenced(t, c) for c in a] for t, a in zip(tasks, free_search(tasks, judge))]
        if kind == "best_free":
            answers = best_free(tasks, judge)[0]
        elif kind in COMPILER_BASELINES:
            answers = compiler_answers(kind, tasks, judge)
        else:
            answers = [BASELINES[kind](t) for t in tasks]
        return [None if a is None else [fenced(t, a)] for t, a in zip(tasks, answers)]
    return answer


def file_answers(path: str | Path):
    """Answers made elsewhere: `{"id", "answer"}` lines (several lines of one id: its samples)."""
    given: dict[str, list[str]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if entry.get("turn", 1) == 1:  # a later turn's answer is not a sample of the task
                given.setdefault(str(entry["id"]), []).append(str(entry["answer"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}:{number}: not an {{\"id\", \"answer\"}} line ({exc})") from exc

    def answer(tasks: list[Task]) -> list[list[str] | None]:
        return [given.get(t.id) for t in tasks]
    return answer


def evaluate(settings: EvalSettings, answer, judge: Judge, tasks: list[Task], name: str, start=None) -> dict:
    """Every task's answers (`answer(tasks)`: completions per task, None where it does not apply)
    judged in one batched call; results per task, per family and overall. With `turns` > 1, each
    attempt the compiler rejects goes back with its errors (synth/tasks/feedback.py) for another
    answer, up to `turns` answers in all; the results are the first turn's, and `solved_by_turn`
    (per task) and `turns` (per family) say what the later turns added. With `start`
    (`after_baseline`), the first answers are its; later turns are the model's."""
    if settings.decoding == "sample" and settings.samples < settings.k:
        raise InputError(f"eval.samples ({settings.samples}) must be at least eval.k ({settings.k})")
    completions, helped = start(tasks) if start else (answer(tasks), {})
    answered = [(t, c) for t, c in zip(tasks, completions) if c is not None]
    outcomes = judge.judge([t for t, cs in answered for _ in cs], [c for _, cs in answered for c in cs])
    chosen, every = {}, []
    if settings.pick == "compiled":
        answered, outcomes, chosen, every = pick_compiled(answered, outcomes)
    flat_tasks = [t for t, cs in answered for _ in cs]
    by_turn, later = turns_of(settings.turns, answer, judge, flat_tasks, [c for _, cs in answered for c in cs], outcomes)
    per_task, kept, start = {}, {}, 0
    for task, mine in answered:
        got = outcomes[start:start + len(mine)]
        per_task[task.id] = task_result(task, mine, got, settings.k)
        per_task[task.id].update(chosen.get(task.id, {}))
        if settings.turns > 1:
            per_task[task.id]["solved_by_turn"] = [sum(turn[start:start + len(mine)]) / len(mine) for turn in by_turn]
        start += len(mine)
        kept.setdefault(task.family, []).extend((task.id, c) for c in mine[:1])
        every += [answer_line(task.id, chosen[task.id]["picked"] if chosen else n, c, o,
                              **({"helped": helped[task.id]} if task.id in helped else {}),
                              **({"picked": True} if chosen else {}))
                  for n, (c, o) in enumerate(zip(mine, got))]
    if chosen:  # every sample in its task's order, as `--answers FILE` reads them back
        position = {task.id: n for n, (task, _) in enumerate(answered)}
        every.sort(key=lambda e: (position[e["id"]], e["sample"]))
    every += later
    families = {family: family_result([p for p in per_task.values() if p["family"] == family], settings.k)
                for family in FAMILIES if any(p["family"] == family for p in per_task.values())}
    for family, samples in kept.items():
        families[family]["samples"] = dict(samples[:KEPT_SAMPLES])
    return {"model": name, "tasks": len(per_task), "not_applicable": len(tasks) - len(answered),
            "summary": family_result(list(per_task.values()), settings.k), "families": families,
            "per_task": per_task, "settings": settings.model_dump(), "answers": every,
            **({"helped": dict(Counter(helped.values()))} if start else {}),
            "oracle": {"check_calls": judge.calls, "completions_checked": judge.checked,
                       "completions_compiled": judge.compiled}}


# what a user sees wrong with code rustc accepts without a reference answer (a changed signature needs one)
SEEN_WITHOUT_REFERENCE = ("hollow", "own attribute", "not defined")


def pick_compiled(answered: list[tuple[Task, list[str]]], outcomes: list[Outcome]):
    """Rejection sampling as a user runs it: per task, of its samples in order, the first that
    rustc accepts and that is not hollow, adds no attribute, defines what was asked and does not
    fail the tests the judge ran (the first sample where none is). Returns the tasks with that one
    answer, its outcome, per task id its result's fields (`picked`: the sample's number;
    `any_sample`: some sample counts and passes the tests, what a perfect picker would get;
    `solved_by_samples`: whether the pick of its first 1, 2, 4, ... samples does, the curve in
    samples of one run), and the samples not picked as answers.jsonl keeps them."""
    picked, got_picked, chosen, others, start = [], [], {}, [], 0
    for task, mine in answered:
        got = outcomes[start:start + len(mine)]
        start += len(mine)
        usable = [o.compiled and o.refused not in SEEN_WITHOUT_REFERENCE and o.tests != 0.0 for o in got]
        n = usable.index(True) if any(usable) else 0
        picked.append((task, [mine[n]]))
        got_picked.append(got[n])
        curve = {str(m): got[usable.index(True) if any(usable[:m]) else 0].passed for m in _doublings(len(got))}
        chosen[task.id] = {"picked": n, "any_sample": any(o.passed for o in got), "solved_by_samples": curve}
        others += [answer_line(task.id, m, c, o, picked=False) for m, (c, o) in enumerate(zip(mine, got)) if m != n]
    return picked, got_picked, chosen, others


def _doublings(n: int) -> list[int]:
    """1, 2, 4, ... up to n samples, and n itself."""
    return sorted({*(2 ** e for e in range(n.bit_length()) if 2 ** e <= n), n})


def _pick_of(curve: dict[str, bool], samples: int) -> bool:
    """A task's pick of its first `samples` samples (of all it has, where it has fewer)."""
    return curve[str(max(int(m) for m in curve if int(m) <= samples))]


def turns_of(turns: int, answer, judge: Judge, tasks: list[Task], completions: list[str], outcomes: list[Outcome]):
    """Per turn, which answers count by then (one flag per sample), and the later turns' answers
    as `NAME.answers.jsonl` keeps them. Each turn, the attempts the compiler rejected go back with
    its errors as one new answer each, judged in one batched call like the first ones."""
    codes = [answer_code(c) for c in completions]
    current, by_turn, kept = list(outcomes), [[o.solved for o in outcomes]], []
    numbers, seen = [], Counter()  # each answer's number among its task's samples, as the first turn counts them
    for task in tasks:
        numbers.append(seen[task.id])
        seen[task.id] += 1
    for turn in range(2, turns + 1):
        again = [i for i, o in enumerate(current) if not o.solved and worth_a_turn(tasks[i], codes[i], o.verdict)]
        if again:
            replies = [r[0] for r in answer([feedback_task(tasks[i], codes[i], current[i].verdict) for i in again], k=1)]
            for i, reply, o in zip(again, replies, judge.judge([tasks[i] for i in again], replies)):
                current[i], codes[i] = o, answer_code(reply)
                kept.append(answer_line(tasks[i].id, numbers[i], reply, o, turn=turn))
        by_turn.append([o.solved for o in current])
    return by_turn, kept


def answer_line(task_id: str, sample: int, answer: str, outcome: Outcome, turn: int | None = None, **more) -> dict:
    """One line of NAME.answers.jsonl: the answer and its verdict (a later turn's says which)."""
    return {"id": task_id, "sample": sample, **({"turn": turn} if turn is not None else {}), "answer": answer,
            "solved": outcome.solved, "passed": outcome.passed, "refused": outcome.refused,
            "first_error": outcome.first_error, **more}


def task_result(task: Task, completions: list[str], outcomes: list[Outcome], k: int) -> dict:
    n = len(outcomes)
    passed, solved = sum(o.passed for o in outcomes), sum(o.solved for o in outcomes)
    result = {"family": task.family, "group": task.group, "n": n, "solved": solved / n, "passed": passed,
              "pass@1": pass_at_k(n, passed, 1), "tests": _mean([o.tests for o in outcomes if o.tests is not None]),
              "failures": [failure(c, o) for c, o in zip(completions, outcomes) if not o.solved]}
    if n >= k:
        result[f"pass@{k}"] = pass_at_k(n, passed, k)
    if task.family == "repair":
        result["exact"] = sum(o.exact for o in outcomes) / n
        result["deleted"] = sum(o.deleted for o in outcomes) / n
        result.update(operator=task.operator, compiler_solvable=task.compiler_solvable,
                      unseen_literals=None if task.unseen_literals is None else len(task.unseen_literals))
    return result


def family_result(results: list[dict], k: int) -> dict:
    """The figures of a set of task results (a family, or all)."""
    tested = [r["tests"] for r in results if r["tests"] is not None]
    out = {"tasks": len(results), "samples": sum(r["n"] for r in results),
           "compile_rate": round(_mean([r["solved"] for r in results]) or 0.0, 4),
           "pass_at_1": round(_mean([r["pass@1"] for r in results]) or 0.0, 4),
           "tests_pass_rate": round(sum(t == 1.0 for t in tested) / len(tested), 4) if tested else None,
           "tasks_with_tests": len(tested),
           "failures": dict(Counter(f for r in results for f in r["failures"]).most_common())}
    if results and all(f"pass@{k}" in r for r in results):
        out[f"pass@{k}"] = round(_mean([r[f"pass@{k}"] for r in results]), 4)
    if results and all("solved_by_turn" in r for r in results):  # the compile rate after each turn
        out["turns"] = [round(_mean([r["solved_by_turn"][t] for r in results]), 4)
                        for t in range(len(results[0]["solved_by_turn"]))]
    if results and all("any_sample" in r for r in results):  # picked by the compiler: what a perfect picker gets
        out["any_sample_rate"] = round(_mean([r["any_sample"] for r in results]), 4)
        sizes = sorted({int(m) for r in results for m in r["solved_by_samples"]})
        out["picked_by_samples"] = {str(m): round(_mean([_pick_of(r["solved_by_samples"], m) for r in results]), 4)
                                    for m in sizes}
    if results and all("exact" in r for r in results):
        out["exact_rate"] = round(_mean([r["exact"] for r in results]), 4)
        out["deleted_rate"] = round(_mean([r["deleted"] for r in results]), 4)
    return out


def failure(completion: str, outcome: Outcome) -> str:
    """Why an answer did not count: no code in it, the compiler's first error code (E0599: a
    method that does not exist, E0425: an unknown name, ...), or it compiled but answers nothing
    (a placeholder body, a self-call, another name, a changed signature)."""
    if not answer_code(completion).strip():
        return "no code"
    return outcome.first_error or (f"compiles, {outcome.refused}" if outcome.refused else "compiles, answers nothing")


def gate_against(baseline: dict, result: dict, settings: EvalSettings, seed: int = 0, family: str | None = None,
                 key: str = "pass@1") -> dict:
    """The paired bootstrap of the per-task change from `baseline` to `result` (one family, or
    all tasks), resampling answer groups."""
    return compare_results(baseline, result, settings.bootstrap, settings.confidence, seed, family, key)


def gates(baseline: dict, result: dict, settings: EvalSettings, seed: int = 0) -> dict:
    """Overall and per family (the families both evaluations have)."""
    out = {"all": gate_against(baseline, result, settings, seed)}
    for family in sorted(set(baseline.get("families", {})) & set(result.get("families", {}))):
        out[family] = gate_against(baseline, result, settings, seed, family)
    return out


def run_eval(settings: EvalSettings, model_dir: str | None, adapter: str | None, oracle_settings, out: str | Path,
             baseline: dict | None = None, seed: int = 0, tasks_path: str | None = None,
             answers: str | None = None, family: str | None = None, after: str | None = None,
             edits: bool = False) -> dict:
    """Evaluate a model (or, with `answers`, a baseline that needs none; with `after`, a model that
    repairs what that baseline leaves; with `edits`, a model that repairs with SEARCH/REPLACE
    blocks) on the tasks (of one family) and write the JSON. The oracles
    are built for the tasks' languages (and a crate oracle when some answers go into a copy of
    their crate)."""
    tasks_path = tasks_path or settings.tasks
    tasks = [t for t in load_tasks(tasks_path) if family is None or t.family == family]
    tasks_fingerprint = fingerprint([Path(tasks_path)])  # the file's hash, read once for every draw
    if answers and after:
        raise InputError("--answers and --after: a baseline alone, or a model after one, not both")
    if answers:  # answers made elsewhere, or a baseline's, have no second turn to give
        settings = settings.model_copy(update={"turns": 1})
    if answers == "free_search":  # its tries are alternatives: the compiler picks one, as of a model's samples
        settings = settings.model_copy(update={"pick": "compiled"})
    if settings.draws > 1 and (answers or settings.decoding != "sample"):
        raise InputError(f"draws = {settings.draws}: only a model's sampled answers can be drawn again "
                         "(greedy decoding and given answers are the same every time)")
    with opened_oracles({t.lang for t in tasks}, any(t.in_crate for t in tasks), oracle_settings) as (oracles, crate):
        judge = Judge(oracles, crate, crate_tests=crate_tests_oracle(oracle_settings, settings.verdicts) if settings.crate_tests
                      else None)
        if answers and (answers.endswith(".jsonl") or Path(answers).is_file()):
            result = evaluate(settings, file_answers(answers), judge, tasks, f"answers:{answers}")
            result["answers_from"] = answers
        elif answers:
            result = evaluate(settings, baseline_answers(answers, judge), judge, tasks, f"baseline:{answers}")
            result["answers_from"] = answers
        else:
            from synth.llm.local import LocalSampler
            sampler = LocalSampler(model_dir, adapter=adapter, max_new_tokens=settings.max_new_tokens,
                                   temperature=settings.temperature, top_p=settings.top_p, seed=seed,
                                   dtype=settings.dtype)
            results = model_draws(settings, sampler, judge, tasks, after, edits, seed)
            result = results[0]
            for n, further in enumerate(results[1:], start=1):  # draws 1.. beside the first, whole
                further.update(model_dir=model_dir, adapter=adapter, tasks_fingerprint=tasks_fingerprint,
                               draw=n, seed=draw_seed(seed, n))
                write_jsonl(answers_path(draw_path(out, n)), further.pop("answers"))
                write_json(draw_path(out, n), further)
            if len(results) > 1:
                result["draws"] = draws_summary(results, out, seed)
    if judge.crate_tests is not None:  # what the crate tests cost: runs made, runs a stored verdict saved
        cache = judge.crate_tests.cache
        result["oracle"]["crate_tests"] = {"crates_with_tests": sum(judge.crate_passes.values()),
                                           "crates_without": sum(not ok for ok in judge.crate_passes.values()),
                                           "runs": judge.crate_tests.stats.compiler_runs,
                                           "stored": cache.hits if cache is not None else 0}
    result.update(model_dir=model_dir, adapter=adapter, tasks_fingerprint=tasks_fingerprint)
    if baseline is not None:
        result["gate"] = gates(baseline, result, settings, seed)
    write_jsonl(answers_path(out), result.pop("answers"))
    write_json(Path(out), result)
    return result


def model_draws(settings: EvalSettings, sampler, judge: Judge, tasks: list[Task], after: str | None, edits: bool,
                seed: int) -> list[dict]:
    """The model's evaluation, drawn `settings.draws` times (draw 0: the evaluation as one draw
    makes it). One judge for all: an answer a draw gave before is not compiled again (each draw's
    `oracle` counts its own checks)."""
    results = []
    for draw in range(settings.draws):
        sampler.seed = draw_seed(seed, draw)
        model = ModelAnswers(settings, sampler, edits)
        start = after_baseline(baseline_answers(after, judge), model, judge) if after else None
        before = (judge.calls, judge.checked, judge.compiled)
        result = evaluate(settings, model, judge, tasks, sampler.name + (f" after {after}" if after else ""), start)
        result["oracle"].update({key: result["oracle"][key] - n for key, n in
                                 zip(("check_calls", "completions_checked", "completions_compiled"), before)})
        if after:
            result["after"] = after
        if model.gave_back:  # greedy replies that handed back the code shown, and those a retry changed
            result["gave_back"] = {f: dict(sorted(c.items())) for f, c in sorted(model.gave_back.items())}
        results.append(result)
    return results


def answers_path(out: str | Path) -> Path:
    """Where an evaluation keeps every answer: beside its JSON."""
    return Path(out).with_suffix(".answers.jsonl")


def _mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None
