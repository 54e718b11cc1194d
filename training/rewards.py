"""GRPO rewards backed by the compiler: `compile` (the completion compiles in its task's context
and defines what the task asks for), `tests` (share of the task's tests passed; none when the
task has no tests) and `format` (one fenced code block, nothing around it).

The three are separate reward functions so TRL logs each component, but they share one
evaluation per generation batch: one batched oracle call per language for the whole batch (not
one per completion), then tests only for completions that compiled."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from oracles.verdict import Candidate
from synth.jsonl import read_jsonl

FENCED = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
ONLY_FENCED = re.compile(r"\s*```[\w+-]*\n.*?```\s*", re.S)
DEFINING = r"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+{name}\b"


class Task(BaseModel):
    """A held-out or RL task: the prompt the model sees, and how an answer is checked."""
    model_config = ConfigDict(extra="forbid")
    id: str
    lang: Literal["rust", "vox"]
    prompt: str
    context: str = ""  # code the answer is placed after (declarations it may use)
    tests: str = ""  # appended for the test run (Rust: a #[cfg(test)] module; Vox: test blocks)
    must_define: list[str] = Field(default_factory=list)
    group: str = ""  # the answer group of the verified reference (held-out tasks share none with training)


def load_tasks(path: str | Path) -> list[Task]:
    if not path or not Path(path).exists():
        raise FileNotFoundError(f"tasks file {str(path)!r} not found (set [train.grpo] tasks / [train.eval] tasks)")
    return read_jsonl(path, Task)


def answer_code(completion: str) -> str:
    match = FENCED.search(completion)
    return (match.group(1) if match else completion).strip("\n")


def defines_all(code: str, names: list[str]) -> bool:
    return all(re.search(DEFINING.format(name=re.escape(n)), code) for n in names)


def candidate_source(task_context: str, code: str, tests: str = "") -> str:
    parts = [p for p in (task_context.strip("\n"), code, tests.strip("\n")) if p]
    return "\n\n".join(parts) + "\n"


@dataclass
class Outcome:
    compiled: bool
    defined: bool
    tests: float | None  # share passed; None when the task has none

    @property
    def passed(self) -> bool:
        return self.compiled and self.defined and (self.tests is None or self.tests == 1.0)


@dataclass
class OracleJudge:
    """Checks a batch of (task, completion) pairs: one batched check per language, tests for
    what compiled. `oracles` maps a language to an oracle with check() and test()."""
    oracles: dict
    calls: int = 0  # batched check calls
    batches: int = 0
    checked: int = 0
    tested: int = 0
    log: list = field(default_factory=list)

    def judge(self, tasks: list[Task], completions: list[str]) -> list[Outcome]:
        self.batches += 1
        codes = [answer_code(c) for c in completions]
        outcomes: list[Outcome | None] = [None] * len(tasks)
        for lang in sorted({t.lang for t in tasks}):
            index = [i for i, t in enumerate(tasks) if t.lang == lang]
            oracle = self.oracles.get(lang)
            if oracle is None:
                raise RuntimeError(f"no oracle for {lang!r} tasks (configure [train.oracle])")
            verdicts = oracle.check([Candidate.of(candidate_source(tasks[i].context, codes[i])) for i in index])
            self.calls += 1
            self.checked += len(index)
            to_test = []
            for i, verdict in zip(index, verdicts):
                defined = defines_all(codes[i], tasks[i].must_define)
                outcomes[i] = Outcome(compiled=verdict.passed, defined=defined,
                                      tests=(0.0 if tasks[i].tests else None))
                if verdict.passed and defined and tasks[i].tests:
                    to_test.append(i)
            if to_test:
                tested = oracle.test([Candidate.of(candidate_source(tasks[i].context, codes[i], tasks[i].tests))
                                      for i in to_test])
                self.tested += len(to_test)
                for i, verdict in zip(to_test, tested):
                    result = verdict.tests
                    outcomes[i].tests = (result.passed / result.total) if result and result.total and \
                        not result.timed_out else 0.0
        return outcomes


class CompilerRewards:
    """TRL reward functions over one shared judgement per generation batch."""

    names = ("compile", "tests", "format")

    def __init__(self, judge: OracleJudge, tasks: dict[str, Task]):
        self.judge, self.tasks = judge, tasks
        self._key = None
        self._outcomes: list[Outcome] = []

    def _outcomes_for(self, completions: list[str], task_id: list[str]) -> list[Outcome]:
        key = (tuple(task_id), tuple(completions))
        if key != self._key:
            self._outcomes = self.judge.judge([self.tasks[t] for t in task_id], completions)
            self._key = key
        return self._outcomes

    def compile(self, prompts, completions, task_id, **kwargs) -> list[float]:
        return [float(o.compiled and o.defined) for o in self._outcomes_for(completions, task_id)]

    def tests(self, prompts, completions, task_id, **kwargs) -> list[float | None]:
        return [o.tests for o in self._outcomes_for(completions, task_id)]

    def format(self, prompts, completions, **kwargs) -> list[float]:
        return [float(bool(ONLY_FENCED.fullmatch(c)) and len(FENCED.findall(c)) == 1) for c in completions]

    def functions(self) -> list:
        return [getattr(self, name) for name in self.names]


def oracles_for(profile_oracle, langs: set[str]) -> dict:
    """Oracles for the languages the tasks use (a missing `vox` fails here, by name)."""
    out = {}
    if "rust" in langs:
        from oracles.rust import RustConfig, RustOracle
        out["rust"] = RustOracle(RustConfig(rustc=profile_oracle.rustc, edition=profile_oracle.edition))
    if "vox" in langs:
        from oracles.vox import VoxConfig, VoxOracle
        out["vox"] = VoxOracle(VoxConfig(binary=profile_oracle.vox))
    return out
