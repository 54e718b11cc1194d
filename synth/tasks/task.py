"""A task (held out for evaluation, or for RL): the prompt the model sees and how an answer is
checked. The synthesis writes them (tasks/rl.jsonl, tasks/heldout.jsonl); the trainers and
`synth eval` read them; synth/tasks/judge/ checks answers. Three families:
- `codegen`: write a declaration; the answer is placed after the task's context (a method checked
  inside its impl block: between `before` and `after`, as its row was checked).
- `repair`: fix a declaration the compiler rejected (the prompt shows it with rustc's errors); the
  answer is placed where the declaration was, standalone (between `before` and `after`) or in a
  copy of its crate (`in_crate`), as the row it comes from was verified.
- `selfrepair`: fix a model's own answer to a held-out codegen task, which rustc rejected (the
  prompt shows it with rustc's errors: synth/tasks/selfrepair.py); placed and judged as its codegen
  task's answer. Only `synth selfrepair` makes them, never the synthesis."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from oracles.errors import MissingInput
from synth.rows.jsonl import read_jsonl

FAMILIES = ("codegen", "repair", "selfrepair")
REPAIRS = ("repair", "selfrepair")  # a broken declaration and rustc's errors: synth's mutant or a model's own mistake


class CrateSpot(BaseModel):
    """Where a declaration sits in its crate: the answer replaces bytes [start_byte, end_byte) of
    `path` (relative to the crate folder `root`)."""
    model_config = ConfigDict(extra="forbid")
    root: str
    path: str
    start_byte: int
    end_byte: int
    name: str = ""  # the declaration's name (the crate oracle's batching reads it)
    trait_impl: bool = False  # a trait impl or a method of one (its callers see the trait's signature)
    features: list[str] = Field(default_factory=list)  # on besides the default ones, as it was verified


class Task(BaseModel):
    """A held-out or RL task: the prompt the model sees, and how an answer is checked."""
    model_config = ConfigDict(extra="forbid")
    id: str
    lang: Literal["rust", "vox"]
    family: Literal["codegen", "repair", "selfrepair"] = "codegen"
    prompt: str
    context: str = ""  # code the answer is placed after (declarations it may use)
    tests: str = ""  # appended for the test run (Rust: a #[cfg(test)] module; Vox: test blocks)
    must_define: list[str] = Field(default_factory=list)  # `name` (any item) or `keyword name` (`fn gcd`)
    group: str = ""  # the answer group of the verified reference (held-out tasks share none with training)
    crate: str = ""  # the crate (or source folder) it comes from: held-out crates give held-out tasks
    declaration: str = ""  # the declaration's content hash: its tasks of every family share one side of the split
    reference: str = ""  # the verified answer (for repair: the declaration before it was broken)
    before: str = ""  # the checked file up to the answer (context, impl header), when not `context` + answer
    after: str = ""  # ... and after it
    # repair only
    broken: str = ""  # the declaration as the prompt shows it, which the compiler rejected (a feedback turn's too)
    signature: str = ""  # the original signature: an answer that changes it does not count
    kind: str = ""  # the declaration's kind (fn, method, impl): where a signature probe goes
    operator: str = ""  # the mutation operator that broke it
    compiler_solvable: bool | None = None  # the compiler's help alone fixes it (synth/tasks/baselines/); None: not known
    # Rust: values the fix needs that no code of the prompt says, only guessed (synth/mutate/unseen.py); None: not known
    unseen_literals: list[str] | None = None
    in_crate: CrateSpot | None = None  # verified in a copy of its crate instead
    # verified standalone: where the declaration sits in its crate all the same (its tests run there)
    crate_spot: CrateSpot | None = None
    # selfrepair only (`broken`: the model's answer)
    made_by: str = ""  # the model(s) whose answer it is, comma-separated

    @property
    def in_its_crate(self) -> CrateSpot | None:
        """Where an answer goes to run the crate's own tests: the declaration's byte span in its crate."""
        return self.in_crate or self.crate_spot

    def source(self, code: str, with_tests: bool = False) -> str:
        """The file a standalone check of `code` as this task's answer compiles."""
        tests = self.tests if with_tests else ""
        if self.family == "repair" or self.before or self.after:  # placed where the declaration was
            return f"{self.before}{code}{self.after}" + (f"\n{tests.strip(chr(10))}\n" if tests else "")
        return candidate_source(self.context, code, tests)


def load_tasks(path: str | Path) -> list[Task]:
    if not path or not Path(path).exists():
        raise MissingInput(f"tasks file {str(path)!r} not found (set [train.grpo] tasks / [train.eval] tasks)")
    return read_jsonl(path, Task)


def candidate_source(task_context: str, code: str, tests: str = "") -> str:
    parts = [p for p in (task_context.strip("\n"), code, tests.strip("\n")) if p]
    return "\n\n".join(parts) + "\n"
