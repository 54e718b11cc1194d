"""GRPO rewards backed by the compiler, declared once each with their default weight (`register`):
`compile` (the completion compiles in its task's context and defines what the task asks for),
`tests` (share of the task's tests passed; none when the task has no tests), `format` (one
fenced code block, nothing around it) and `layered` (off unless weighted: one graded score, for a
policy that rarely compiles: a group whose samples all fail still differs by how far each got).
A profile's `grpo.reward_weights` only overrides weights.

They are separate reward functions so TRL logs each component, but they share one evaluation per
generation batch: one batched oracle call per language for the whole batch (not one per
completion), then tests only for completions that compiled."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from synth.tasks.completion import answer_code, is_one_fenced_block
from synth.tasks.edits import answer_for
from synth.tasks.task import Task

if TYPE_CHECKING:  # the judge is handed in; only its answers are read here
    from synth.tasks.judge import Judge, Outcome


@dataclass
class Batch:
    """One generation batch as the reward components see it; the compiler judges it once, on
    first use, whichever components ask."""
    tasks: list[Task]
    completions: list[str]
    judge: Judge
    _outcomes: list[Outcome] | None = None

    def outcomes(self) -> list[Outcome]:
        if self._outcomes is None:
            self._outcomes = self.judge.judge(self.tasks, self.completions)
        return self._outcomes


@dataclass(frozen=True)
class RewardComponent:
    name: str  # logged by TRL as rewards/<name>
    weight: float  # default weight in the GRPO sum; a profile's grpo.reward_weights overrides it
    score: Callable[[Batch], list[float | None]]  # one score per completion; None: not applicable


COMPONENTS: dict[str, RewardComponent] = {}  # in declaration order: TRL's functions and weights follow it


def register(name: str, weight: float):
    """Declare a reward component with its default weight (a decorator over its scoring function)."""
    def add(score: Callable[[Batch], list[float | None]]):
        if name in COMPONENTS:
            raise ValueError(f"reward component {name!r} is registered twice")
        COMPONENTS[name] = RewardComponent(name, weight, score)
        return score
    return add


@register("compile", weight=1.0)
def compiles(batch: Batch) -> list[float]:
    return [float(o.solved) for o in batch.outcomes()]


@register("tests", weight=1.0)
def tests_passed(batch: Batch) -> list[float | None]:
    return [o.tests for o in batch.outcomes()]


@register("format", weight=0.2)
def one_fenced_block(batch: Batch) -> list[float]:
    return [float(is_one_fenced_block(c)) for c in batch.completions]


# The tiers of `layered`: how far an answer got before it stopped counting.
TIERS = {"nothing": 0.0, "parses": 0.25, "compiles": 0.5, "counts": 0.75, "passes": 1.0}


PRETENDS = ("hollow", "own attribute", "deleted")  # refusals of code that compiles by not doing the work


def tier(completion: str, outcome: Outcome, lang: str) -> str:
    """nothing (no code, code that does not parse, or code that compiles by pretending: a body
    `std::process::abort()`, an own `#[allow]`, the erroring lines dropped; paid above a real
    attempt, a policy that cannot fix learns to pretend); parses (Rust: tree-sitter finds no syntax
    error; Vox has no parser here, so a rejected Vox answer is nothing); compiles (placed in its
    task, but does not count: another name, a changed signature); counts (the `compile` reward);
    passes (its tests too, or it has none)."""
    if outcome.solved:
        return "passes" if outcome.tests in (None, 1.0) else "counts"
    if outcome.compiled:
        return "nothing" if outcome.refused in PRETENDS else "compiles"
    code = answer_code(completion)
    if lang == "rust" and code.strip():
        from synth.rust_syntax import rust_parser
        return "nothing" if rust_parser().parse(code.encode()).root_node.has_error else "parses"
    return "nothing"


@register("layered", weight=0.0)
def layered(batch: Batch) -> list[float]:
    return [TIERS[tier(c, o, t.lang)] for c, o, t in zip(batch.completions, batch.outcomes(), batch.tasks)]


class CompilerRewards:
    """TRL reward functions, one per registered component, over one shared judgement per batch."""

    def __init__(self, judge: Judge, tasks: dict[str, Task], edits: bool = False):
        self.judge, self.tasks = judge, tasks
        self.edits = edits  # a repair completion is an edit: judged as the declaration it makes
        self._key = None
        self._batch: Batch | None = None

    def batch(self, completions: list[str], task_id: list[str]) -> Batch:
        key = (tuple(task_id), tuple(completions))
        if key != self._key:  # TRL calls every component with the same batch: judge it once
            tasks = [self.tasks[t] for t in task_id]
            self._batch = Batch(tasks, [answer_for(t, c, self.edits) for t, c in zip(tasks, completions)], self.judge)
            self._key = key
        return self._batch

    def functions(self) -> list:
        return [self._trl_function(component) for component in COMPONENTS.values()]

    def _trl_function(self, component: RewardComponent):
        def reward(prompts, completions, task_id, **kwargs) -> list[float | None]:
            return component.score(self.batch(completions, task_id))
        reward.__name__ = component.name  # TRL names the logged component after the function
        return reward
