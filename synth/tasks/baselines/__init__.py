"""Answers to repair and self-repair tasks (a model's own mistake is a broken declaration too)
that need no model, judged exactly like a model's (synth/tasks/judge/):
- `unchanged`: the broken declaration sent back as it is. It compiles nowhere by construction,
  so anything above 0 is a broken judge.
- `rustc`: what `cargo fix` would do: the suggestions rustc marks MachineApplicable that lie
  inside the declaration, applied round after round.
- `rustc_all`: every suggestion rustc attaches to an error with a replacement, whatever its
  applicability (the similar-name help and the borrow rustc only marks MaybeIncorrect too), but
  none with placeholders (`/* u32 */`, `todo!()`), the first of each error's alternatives, in
  rounds as rustfix applies them.
- `compiler_words`: the best repairer built from rustc's output alone, no model
  (synth/tasks/baselines/compiler_words.py): rules on its words (similar names, expected and found types, the
  binding to make `mut`, the import it suggests, the nearest name it did not find), and where no
  rule speaks to an error, that error's own suggestion as in `rustc_all`, or the one whose typed
  placeholders it fills (`/* usize */` -> `0`).
- `reference`: the verified answer itself. Every task should count: a check of the judge and of
  the task's placement (a task whose own reference fails cannot measure anything).
`best_free` (synth eval and the loop) is, per task, whichever of `rustc_all` and
`compiler_words` fixes it: what a user has for free. A repair model is worth something beyond it.

The compiler's baselines run in rounds: each round one batched check (through the judge, so in
place: standalone or in a copy of the crate) of every answer the round changed; a task stops at
an answer that compiles or when a round changes nothing. A baseline answers None where it does
not apply (a codegen task; a Vox task for rustc's); such tasks are left out of its rate and
counted."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from oracles.verdict import Diagnostic, Verdict
from synth.assemble.answers import normalize_answer
from .compiler_words import char_edits, first_fix, word_edits
from synth.tasks.task import REPAIRS, Task

ROUNDS = 4  # cargo fix's own limit on rounds of fixes
COMPILER_BASELINES = ("rustc", "rustc_all", "compiler_words")
FREE = ("rustc_all", "compiler_words")  # what best_free chooses from


def unchanged(task: Task) -> str | None:
    return task.broken if task.family in REPAIRS else None


def machine_applicable(code: str, diagnostics: list[Diagnostic]) -> str:
    """`cargo fix`: every MachineApplicable suggestion in the code, of errors and warnings."""
    return char_edits(code, [e for d in diagnostics for f in d.fixes[:1] if f.applicability == "MachineApplicable"
                             for e in f.edits])


def every_suggestion(code: str, diagnostics: list[Diagnostic]) -> str:
    """Each error's first suggestion that has no placeholder, whatever rustc thinks of it."""
    return char_edits(code, [e for d in diagnostics if d.severity == "error" for e in first_fix(d)])


def compiler_words(code: str, diagnostics: list[Diagnostic]) -> str:
    return char_edits(code, word_edits(code, diagnostics))


STEPS: dict[str, Callable[[str, list[Diagnostic]], str]] = {
    "rustc": machine_applicable, "rustc_all": every_suggestion, "compiler_words": compiler_words}


def compiler_answers(kind: str, tasks: list[Task], judge, verdicts: list[Verdict] | None = None,
                     rounds: int = ROUNDS) -> list[str | None]:
    """Each task's broken declaration after `kind`'s fixes, round after round (`verdicts`: the
    broken code's, where the caller has them already)."""
    step = STEPS[kind]
    index = [i for i, t in enumerate(tasks) if t.family in REPAIRS and t.lang == "rust"]
    codes = {i: tasks[i].broken for i in index}
    if verdicts is None:
        verdicts = [None] * len(tasks)
        for i, v in zip(index, judge.check([tasks[i] for i in index], [codes[i] for i in index])):
            verdicts[i] = v
    current = {i: verdicts[i] for i in index}
    live = index
    for _ in range(rounds):
        changed = []
        for i in live:
            if current[i].passed:
                continue
            new = step(codes[i], in_declaration(tasks[i], codes[i], current[i].diagnostics))
            if new != codes[i]:
                codes[i] = new
                if not restores(tasks[i], new):  # the verified original compiles there: no check needed
                    changed.append(i)
        if not changed:
            break
        for i, verdict in zip(changed, judge.check([tasks[i] for i in changed], [codes[i] for i in changed])):
            current[i] = verdict
        live = changed
    return [codes.get(i) for i in range(len(tasks))]


def best_free(tasks: list[Task], judge, verdicts: list[Verdict] | None = None) -> tuple[list, list]:
    """Per task, the first of rustc_all's and compiler_words' answers that counts (else
    compiler_words'), and whether one counts (None where neither applies): what the compiler's
    help gives for free. An answer that restores the verified original counts without a check."""
    tried = {kind: compiler_answers(kind, tasks, judge, verdicts) for kind in FREE}
    counts: dict[tuple[int, str], bool] = {}
    flat = []
    for i, task in enumerate(tasks):
        for kind in FREE:
            answer = tried[kind][i]
            if answer is None or answer == task.broken:
                counts[(i, kind)] = False
            elif restores(task, answer):
                counts[(i, kind)] = True
            else:
                flat.append((i, kind))
    outcomes = judge.judge([tasks[i] for i, _ in flat], [fenced(tasks[i], tried[k][i]) for i, k in flat]) if flat else []
    counts.update({key: o.solved for key, o in zip(flat, outcomes)})
    answers, solvable = [], []
    for i in range(len(tasks)):
        if tried[FREE[1]][i] is None:
            answers.append(None)
            solvable.append(None)
            continue
        good = [k for k in FREE if counts[(i, k)]]
        answers.append(tried[good[0] if good else FREE[1]][i])
        solvable.append(bool(good))
    return answers, solvable


def fenced(task: Task, code: str) -> str:
    """An answer as a model replies with it: the code in one fenced block of the task's language."""
    return f"```{task.lang}\n{code}\n```"


def restores(task: Task, code: str) -> bool:
    """The code is the task's verified original (comments and whitespace aside)."""
    return bool(task.reference) and normalize_answer(code, task.lang) == normalize_answer(task.reference, task.lang)


def in_declaration(task: Task, code: str, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics on the declaration, positions and suggestions moved into its own lines and
    columns (a check places it after `before`, or in its crate's file at its byte span); what
    points elsewhere, or reaches outside it, is left out."""
    lines, shift = _placement(task)
    span = code.count("\n") + 1
    out = []
    for d in diagnostics:
        if d.path or d.line is None or not lines < d.line <= lines + span:
            continue
        move = lambda line, column: (line - lines, column - (shift if line == lines + 1 else 0))  # noqa: E731
        fixes = [f.model_copy(update={"edits": [(*move(a, b), *move(c, e), text) for a, b, c, e, text in f.edits]})
                 for f in d.fixes if all(lines < a and c <= lines + span for a, _, c, _, _ in f.edits)]
        line, column = move(d.line, d.column or 1)
        end_line, end_column = move(d.end_line or d.line, d.end_column or column)
        out.append(d.model_copy(update={"line": line, "column": column, "end_line": end_line,
                                        "end_column": end_column, "fixes": fixes}))
    return out


def _placement(task: Task) -> tuple[int, int]:
    """Lines of the checked file before the declaration, and the characters before it on its first line."""
    if task.in_crate is None:
        return task.before.count("\n"), len(task.before) - (task.before.rfind("\n") + 1)
    spot = task.in_crate
    data = (Path(spot.root) / spot.path).read_bytes()[:spot.start_byte]
    return 0, len(data[data.rfind(b"\n") + 1:].decode(errors="replace"))


BASELINES = {"unchanged": lambda task: unchanged(task),
             "reference": lambda task: task.reference or None}
