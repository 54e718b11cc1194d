"""Answers to repair tasks that need no model, judged exactly like a model's (synth/judge.py):
- `unchanged`: the broken declaration sent back as it is. It compiles nowhere by construction,
  so anything above 0 is a broken judge.
- `rustc`: rustc's own fix: every suggestion the compiler marks MachineApplicable (the ones
  `cargo fix` applies) that lies inside the declaration, applied and checked again, round after
  round, as `cargo fix` does. A repair model is worth something where these are not enough.
- `reference`: the verified answer itself. Every task should count: a check of the judge and of
  the task's placement (a task whose own reference fails cannot measure anything).
A baseline answers None where it does not apply (a codegen task; rustc's fix for a task verified
in its crate, whose check is cargo's); such tasks are left out of its rate and counted."""
from __future__ import annotations

from synth.task import Task

RUSTFIX_ROUNDS = 4  # cargo fix's own limit on rounds of fixes


def unchanged(task: Task) -> str | None:
    return task.broken if task.family == "repair" else None


def rustc_fix(task: Task, oracle, rounds: int = RUSTFIX_ROUNDS) -> str | None:
    """The broken declaration after rustc's machine-applicable suggestions inside it."""
    if task.family != "repair" or task.lang != "rust" or task.in_crate is not None:
        return None
    code = task.broken
    for _ in range(rounds):
        start = len(task.before.encode())
        end = start + len(code.encode())
        edits = [(s - start, e - start, text) for s, e, text in oracle.suggestions(task.source(code))
                 if start <= s and e <= end]
        if not edits:
            break
        code = apply_edits(code, edits)
    return code


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start byte, end byte, replacement) applied; an edit overlapping an earlier
    one is skipped (rustfix applies the first of overlapping suggestions)."""
    data = text.encode()
    kept, end = [], -1
    for start, stop, replacement in sorted(edits):
        if start >= end:
            kept.append((start, stop, replacement))
            end = max(stop, start + 1)
    for start, stop, replacement in reversed(kept):
        data = data[:start] + replacement.encode() + data[stop:]
    return data.decode()


BASELINES = {"unchanged": lambda task, oracles: unchanged(task),
             "reference": lambda task, oracles: task.reference or None,
             "rustc": lambda task, oracles: rustc_fix(task, oracles["rust"])}
