"""Tasks from the data: the verified rows of every lane that has a context and names what it
defines become RL and held-out tasks (the `training.rewards.Task` shape), with the crate's own
unit tests that exercise the function where they pass on the reference answer.

The split: held-out tasks come from held-out crates; the rest is split by answer group between
SFT rows and RL tasks. A held-out task whose answer group is also on the training side is
refused (dropped and counted), and `check_disjoint` refuses any tasks file set that leaks."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from oracles.verdict import Candidate
from synth.assemble.answers import LeakedSplit, answer_hash
from synth.assemble.mix import unit
from synth.extract.model import Declaration, crate_name
from synth.jsonl import write_jsonl
from synth.task import Task, candidate_source

TESTS_HEAD = "#[cfg(test)]\nmod tests {\n    use super::*;\n\n"


def row_group(row: dict) -> str:
    return answer_hash(row["response"], row["lang"])


def task_of(row: dict) -> Task | None:
    """The task a verified row poses, when its check is exactly the task's (context + answer)."""
    if not row.get("must_define") or row.get("task") != "codegen":
        return None
    if (row.get("verification") or {}).get("scope", "standalone") != "standalone":
        return None  # verified in its crate: a task's standalone check could not confirm its answer
    context = row.get("context", "")
    if row.get("checked_source") not in (candidate_source(context, row["response"]), f"{context}{row['response']}\n"):
        return None  # verified in another shape (e.g. a bare method outside its impl): not a task
    return Task(id=row["id"], lang=row["lang"], prompt=row["prompt"], context=row.get("context", ""),
                tests=row.get("tests", ""), must_define=list(row["must_define"]), group=row_group(row))


@dataclass
class Split:
    sft_rows: list[dict] = field(default_factory=list)
    rl_tasks: list[Task] = field(default_factory=list)
    heldout_tasks: list[Task] = field(default_factory=list)
    refused: int = 0  # held-out tasks dropped: their answer group is on the training side

    def stats(self) -> dict:
        return {"sft_rows": len(self.sft_rows), "rl_tasks": len(self.rl_tasks),
                "heldout_tasks": len(self.heldout_tasks), "heldout_refused": self.refused}


def split_rows(rows: list[dict], heldout_crates: set[str], rl_share: float, seed: int) -> Split:
    """Held-out crates' rows -> held-out tasks; the others by answer group -> RL tasks or SFT rows."""
    split = Split()
    training = [r for r in rows if r.get("crate") not in heldout_crates]
    for row in training:
        task = task_of(row)
        if task is not None and unit(seed, "rl", task.group) < rl_share:
            split.rl_tasks.append(task)
        else:
            split.sft_rows.append(row)
    rl_groups = {t.group for t in split.rl_tasks}
    moved = [r for r in split.sft_rows if row_group(r) in rl_groups]  # a twin of an RL answer
    split.sft_rows = [r for r in split.sft_rows if row_group(r) not in rl_groups]
    split.rl_tasks += [t for t in map(task_of, moved) if t is not None]
    seen = {row_group(r) for r in split.sft_rows} | rl_groups
    for row in rows:
        if row.get("crate") in heldout_crates and (task := task_of(row)) is not None:
            if task.group in seen:
                split.refused += 1
            else:
                seen.add(task.group)
                split.heldout_tasks.append(task)
    return split


def check_disjoint(sft_rows: list[dict], rl_tasks: list[Task], heldout_tasks: list[Task]) -> None:
    training = {row_group(r) for r in sft_rows} | {t.group for t in rl_tasks}
    leaked = [t.id for t in heldout_tasks if not t.group or t.group in training]
    if leaked:
        raise LeakedSplit(f"{len(leaked)} held-out tasks share an answer group with SFT rows or RL tasks "
                          f"(or carry none), e.g. {leaked[:3]}; they would measure memory, not skill")


def write_tasks(out_dir: str | Path, split: Split) -> dict:
    """tasks/rl.jsonl and tasks/heldout.jsonl under `out_dir`, after the leak check."""
    check_disjoint(split.sft_rows, split.rl_tasks, split.heldout_tasks)
    folder = Path(out_dir) / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "rl.jsonl", [t.model_dump() for t in split.rl_tasks])
    write_jsonl(folder / "heldout.jsonl", [t.model_dump() for t in split.heldout_tasks])
    return split.stats()


# -- the crate's own unit tests ---------------------------------------------------------------------

def unit_tests_calling(name: str, test_decls: list[Declaration], limit: int = 3) -> list[Declaration]:
    call = re.compile(rf"\b{re.escape(name)}\s*(::<[^>]*>)?\s*\(")
    return [t for t in test_decls if t.is_test and t.kind == "fn" and call.search(t.body)][:limit]


def tests_module(tests: list[Declaration]) -> str:
    body = "\n\n".join("    " + t.clean_text.strip().replace("\n", "\n    ") for t in tests)
    return f"{TESTS_HEAD}{body}\n}}" if tests else ""


def attach_tests(rows: list[dict], test_decls: list[Declaration], oracle) -> int:
    """Gives each row the crate tests that call its function and pass on its reference answer (run
    by the oracle's test path, as the reward runs them); returns how many rows got tests."""
    by_crate: dict[str, list[Declaration]] = {}
    for t in test_decls:
        by_crate.setdefault(crate_name(t), []).append(t)
    wanted = []
    for row in rows:
        module = tests_module(unit_tests_calling(row["must_define"][0], by_crate.get(row.get("crate"), [])))
        if module and row.get("must_define"):
            wanted.append((row, module))
    verdicts = oracle.test([Candidate.of(candidate_source(r.get("context", ""), r["response"], m))
                            for r, m in wanted]) if wanted else []
    attached = 0
    for (row, module), verdict in zip(wanted, verdicts):
        outcome = verdict.tests
        if verdict.passed and outcome and outcome.total and outcome.passed == outcome.total:
            row["tests"] = module
            attached += 1
    return attached



def split_outputs(out_dir: str | Path, outputs: list, heldout_crates: list[str], heldout_share: float,
                  rl_share: float, seed: int) -> dict:
    """The pipeline's step: the rows of the lanes that pose tasks (stage outputs with `.rows`) are
    split; the stages keep only their SFT rows, and the tasks files are written. Held-out crates:
    the ones named, else a seeded share of the crates present."""
    rows = [r.model_dump(mode="json") for o in outputs for r in o.rows]
    crates = sorted({r["crate"] for r in rows if r.get("crate")})
    held = set(heldout_crates) or {c for c in crates if unit(seed, "heldout", c) < heldout_share}
    split = split_rows(rows, held, rl_share, seed)
    stats = write_tasks(out_dir, split)
    keep = {r["id"] for r in split.sft_rows}
    for output in outputs:
        output.rows = [r for r in output.rows if r.id in keep]
    return {**stats, "heldout_crates": sorted(held)}
