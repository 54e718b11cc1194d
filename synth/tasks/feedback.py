"""Compile-feedback turns: an answer the compiler rejected goes back to the model with rustc's
errors, as a repair prompt whose broken declaration is the answer itself (the prompt a repair row
teaches, so a model trained on synth's repair rows reads it as it reads them). The task is
otherwise the same: the next answer is placed and judged as the first one was."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synth.prompting.templates import DECLARATION_INSTRUCTION, language_and_fence, template
from synth.tasks.completion import answer_code, defines
from synth.tasks.diagnostics import render_diagnostics
if TYPE_CHECKING:  # annotations only
    from oracles.verdict import Verdict
    from synth.tasks.task import Task


def lines_before(task: Task, code: str) -> int:
    """Lines of the checked file before the answer's first line, as the verdict counts them (a
    crate check reports its lines in the declaration's own already)."""
    if task.in_crate is not None:
        return 0
    source = task.source(code)
    at = source.find(code) if code else -1
    return source[:at].count("\n") if at >= 0 else 0


def feedback_prompt(task: Task, code: str, verdict: Verdict) -> str:
    """The repair prompt for `code`, the answer `verdict` rejected, in the task's context."""
    language, fence = language_and_fence(task.lang)
    diagnostics = render_diagnostics(verdict, code, lines_before(task, code)) or "error: it does not compile"
    return template("repair").format(language=language, fence=fence, context=task.context.rstrip() or "(none)",
                                     owner="", broken=code.rstrip(), diagnostics=diagnostics,
                                     instruction=DECLARATION_INSTRUCTION).strip()


def feedback_task(task: Task, code: str, verdict: Verdict) -> Task:
    """The task of the next turn: the same check, the feedback as its prompt (the answer as the
    broken declaration it shows)."""
    return task.model_copy(update={"prompt": feedback_prompt(task, code, verdict), "broken": code})


def gives_back(task: Task, answer: str) -> bool:
    """The answer is the broken code the task showed, unchanged: no attempt at a fix."""
    return bool(task.broken.strip()) and answer_code(answer).strip() == task.broken.strip()


def sent_back(code: str, verdict: Verdict | None) -> bool:
    """Whether an answer gets another turn: it has code and the compiler rejected it (an answer
    that compiles but does not count has no error to show)."""
    return bool(code.strip()) and verdict is not None and not verdict.passed


def worth_a_turn(task: Task, code: str, verdict: Verdict | None) -> bool:
    """Whether a failing answer goes back for another turn: the compiler rejected it and it is an
    attempt at what was asked (it defines it). Prose ("The compiler will not compile this code.")
    and another item are no broken version of the declaration: their errors teach nothing, and on
    the base model they were two thirds of the second turns (RFT and self-repair read attempts so too)."""
    return sent_back(code, verdict) and defines(code, task.must_define)
