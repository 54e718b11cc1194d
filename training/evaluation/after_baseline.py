"""A model after a baseline (`synth eval --after best_free`): what a user who runs the compiler's
fixes first and then the model gets. The baseline's answer stands where it counts (and passes the
task's tests, where the judge runs some: a user who has tests runs them); where it got
the code further the model repairs what it left; elsewhere the model answers the task itself;
and the baseline gets the model's repair answers in turn. A baseline of several answers a task
(`free_search`) is read as a user clicking through them: the first that counts stands."""
from __future__ import annotations

from synth.tasks.completion import answer_code
from synth.tasks.feedback import feedback_task, gives_back, worth_a_turn
from synth.tasks.judge import Judge
from synth.tasks.task import REPAIRS, Task


def after_baseline(baseline, answer, judge: Judge):
    """First answers that start from a baseline's (`baseline_answers`): where its answer counts and
    passes the task's tests (if any), it is the answer; where its change got the code further (rustc rejects it, but with fewer errors
    and none new: one error of two fixed) the model gets that code back with its errors
    (`feedback_task`); elsewhere (nothing changed, nothing applies, a guess that failed with an
    error of its own, or it compiles but does not count) the model answers the task itself. The
    baseline then gets the model's repair answers in turn (`polish`). Returns the answers and, per
    task id the baseline had a hand in, "baseline" (its answer alone) or "after model"."""
    def start(tasks: list[Task]) -> tuple[list[list[str] | None], dict[str, str]]:
        given = baseline(tasks)
        spots = [(i, k) for i, g in enumerate(given) if g is not None for k in range(len(g))]
        judged = judge.judge([tasks[i] for i, _ in spots], [given[i][k] for i, k in spots]) if spots else []
        tried = sorted({i for i, _ in spots})
        before = dict(zip(tried, judge.check([tasks[i] for i in tried], [tasks[i].broken for i in tried])))
        chosen = choose(tasks, given, spots, judged, before)
        asks: list[tuple[int, Task]] = []
        for i, task in enumerate(tasks):
            k, outcome, sent = chosen.get(i, (None, None, False))
            if outcome is not None and outcome.passed:
                continue
            asks.append((i, feedback_task(task, answer_code(given[i][k]), outcome.verdict) if sent else task))
        replies = answer([t for _, t in asks]) if asks else []
        replies, polished = polish(baseline, judge, [tasks[i] for i, _ in asks], replies)
        out = [None if g is None else [g[chosen[i][0]]] for i, g in enumerate(given)]
        for (i, _), reply in zip(asks, replies):
            out[i] = reply
        return out, {**{tasks[i].id: "baseline" for i, (_, o, _) in chosen.items() if o.passed},
                     **{tasks[asks[n][0]].id: "after model" for n in polished}}
    return start


def choose(tasks: list[Task], given, spots, judged, before) -> dict[int, tuple]:
    """Per task the baseline answered, which of its answers stands: the first that counts; else the
    first whose change got the code further (it goes back to the model with its errors); else its
    first. Returns (answer index, outcome, whether it goes back)."""
    tries: dict[int, list] = {}
    for (i, k), outcome in zip(spots, judged):
        tries.setdefault(i, []).append((k, outcome))
    chosen: dict[int, tuple] = {}
    for i, answers in tries.items():
        chosen[i] = (next(((k, o, False) for k, o in answers if o.passed), None)
                     or next(((k, o, True) for k, o in answers if goes_back(tasks[i], given[i][k], o, before[i])), None)
                     or (*answers[0], False))
    return chosen


def goes_back(task: Task, answer: str, outcome, before) -> bool:
    """A baseline's failing answer the model gets back with its errors: it changed the code, is an
    attempt at what was asked, and left fewer errors than the task had, none new (`further`)."""
    code = answer_code(answer)
    return bool(code.strip()) and not gives_back(task, code) and worth_a_turn(task, code, outcome.verdict) \
        and further(before, outcome.verdict)


def further(before, after) -> bool:
    """rustc's errors after a change are fewer than before it, and none is of a new kind (a
    placeholder filled with a value the type does not have adds an error of its own)."""
    codes = lambda verdict: [e.code for e in verdict.errors]  # noqa: E731
    return len(codes(after)) < len(codes(before)) and set(codes(after)) <= set(codes(before))


def polish(baseline, judge: Judge, tasks: list[Task], replies: list[list[str]]) -> tuple[list[list[str]], set[int]]:
    """Each repair answer with the baseline's fixes applied to it, where that makes it count (the
    compiler's help after the model, as `cargo fix` after an edit); and which tasks gained one."""
    spots = [(n, s) for n, r in enumerate(replies) for s, c in enumerate(r)
             if tasks[n].family in REPAIRS and answer_code(c).strip()]
    again = [tasks[n].model_copy(update={"broken": answer_code(replies[n][s])}) for n, s in spots]
    fixed = baseline(again) if again else []
    changed = [(spot, a) for spot, f, t in zip(spots, fixed, again) if f is not None
               for a in f if answer_code(a).strip() != t.broken.strip()]
    outcomes = judge.judge([tasks[n] for (n, _), _ in changed], [a for _, a in changed]) if changed else []
    firsts: dict[tuple[int, int], str] = {}  # a baseline of several answers: its first that counts
    for (spot, a), outcome in zip(changed, outcomes):
        if outcome.passed:
            firsts.setdefault(spot, a)
    out = [list(r) for r in replies]
    for (n, s), a in firsts.items():
        out[n][s] = a
    return out, {n for n, _ in firsts}
