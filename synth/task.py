"""A task (held out for evaluation, or for RL): the prompt the model sees and how an answer is
checked. The synthesis writes them (tasks/rl.jsonl, tasks/heldout.jsonl); the trainers and
`synth eval` read them. The check is one function for both: the answer placed in its context."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from synth.jsonl import read_jsonl


class Task(BaseModel):
    """A held-out or RL task: the prompt the model sees, and how an answer is checked."""
    model_config = ConfigDict(extra="forbid")
    id: str
    lang: Literal["rust", "vox"]
    prompt: str
    context: str = ""  # code the answer is placed after (declarations it may use)
    tests: str = ""  # appended for the test run (Rust: a #[cfg(test)] module; Vox: test blocks)
    must_define: list[str] = Field(default_factory=list)  # `name` (any item) or `keyword name` (`fn gcd`)
    group: str = ""  # the answer group of the verified reference (held-out tasks share none with training)


def load_tasks(path: str | Path) -> list[Task]:
    if not path or not Path(path).exists():
        raise FileNotFoundError(f"tasks file {str(path)!r} not found (set [train.grpo] tasks / [train.eval] tasks)")
    return read_jsonl(path, Task)


def candidate_source(task_context: str, code: str, tests: str = "") -> str:
    parts = [p for p in (task_context.strip("\n"), code, tests.strip("\n")) if p]
    return "\n\n".join(parts) + "\n"
