"""Tasks from the data: the verified rows of the lanes that pose tasks become RL and held-out tasks
(synth/tasks/task.py) of their family: `codegen` (a row with a context that names what it defines) and
`repair` (a mutant the compiler rejected: the answer goes where the declaration was, standalone or
in a copy of its crate, as the row was verified). A task whose reference is a function of plain
values gets tests of its values (synth/tasks/judge/same_values.py); one that says where it sits in
its crate runs the crate's own tests too (the judge's `crate_tests`).

The split: held-out tasks come from held-out crates; the rest is split by declaration between SFT
rows and RL tasks (all rows of one declaration, whatever their lane, go to one side). A held-out
task whose answer group is also on the training side is refused (dropped and counted), and
`check_disjoint` refuses any tasks file set that leaks."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from synth.assemble.answers import LeakedSplit, answer_hash
from synth.assemble.mix import unit
from synth.mutate.unseen import unseen_literals
from synth.tasks.completion import definition_of
from synth.tasks.judge.same_values import with_same_value_tests
from synth.rows.held import HeldRow
from synth.rows.jsonl import write_jsonl
from synth.tasks.task import FAMILIES, CrateSpot, Task, candidate_source


def row_group(row: dict) -> str:
    return answer_hash(row["response"], row["lang"])


def declaration_of(row: dict) -> str:
    """What a row's rows share with the other rows of its declaration (the split's unit)."""
    return (row.get("provenance") or {}).get("decl_hash") or row_group(row)


def task_of(row: dict, families=FAMILIES, roots: dict[str, str] | None = None) -> Task | None:
    """The task a verified row poses, when its check can be repeated on an answer (`roots`: crate
    name -> its folder, where a repair task's crate tests run)."""
    family = {"codegen": "codegen", "repair": "repair"}.get(row.get("task"))
    if family not in families:
        return None
    return codegen_task(row, roots) if family == "codegen" else repair_task(row, roots)


def codegen_task(row: dict, roots: dict[str, str] | None = None) -> Task | None:
    """A codegen row whose check is exactly the task's (context + answer); where `roots` names
    its crate's folder, the task says where the function sits there (its crate's tests run it)."""
    if not row.get("must_define"):
        return None
    if (row.get("verification") or {}).get("scope", "standalone") != "standalone":
        return None  # verified in its crate: a task's standalone check could not confirm its answer
    context, checked, answer = row.get("context", ""), row.get("checked_source") or "", row["response"]
    placed = {}
    if checked not in (candidate_source(context, answer), f"{context}{answer}\n"):
        # checked in another shape (a method inside its impl block): the answer goes where it was
        if checked.count(answer) != 1 or not checked.startswith(context.strip("\n")):
            return None
        at = checked.index(answer)
        placed = {"before": checked[:at], "after": checked[at + len(answer):]}
    return Task(id=row["id"], lang=row["lang"], prompt=row["prompt"], context=context,
                tests=row.get("tests", ""), must_define=list(row["must_define"]), group=row_group(row),
                crate=row.get("crate", ""), declaration=declaration_of(row), reference=answer,
                crate_spot=spot_in(row, roots), **placed)


def repair_task(row: dict, roots: dict[str, str] | None = None) -> Task | None:
    """A repair row whose answer is a declaration: placed where the broken one was (standalone:
    its checked files differ only there; in its crate: over the declaration's byte span). One
    checked standalone says where it sits in its crate when `roots` names its crate's folder."""
    if row.get("answer_format", "declaration") != "declaration" or not row.get("signature"):
        return None
    broken, fixed = row["broken"], row["fixed"]
    common = {"id": row["id"], "lang": row["lang"], "family": "repair", "prompt": row["prompt"],
              "must_define": [] if row.get("kind") == "impl" else [definition_of(row.get("kind", ""), row.get("name", ""))],
              "group": row_group(row), "crate": row.get("crate", ""), "declaration": declaration_of(row),
              "reference": fixed, "broken": broken, "signature": row["signature"], "kind": row.get("kind", ""),
              "operator": row.get("operator", ""), "compiler_solvable": row.get("compiler_solvable"),
              "unseen_literals": unseen_literals(broken, fixed, row["prompt"]) if row["lang"] == "rust" else None}
    verification = row.get("verification") or {}
    if verification.get("scope") == "crate":
        recipe = verification.get("crate") or {}
        if not recipe.get("root"):
            return None  # recorded before rows said where their crate is
        return Task(**common, in_crate=CrateSpot(root=recipe["root"], path=recipe["path"],
                                                 start_byte=recipe["start_byte"], end_byte=recipe["end_byte"],
                                                 name=recipe.get("decl_name", ""), trait_impl=recipe.get("trait_impl", False),
                                                 features=recipe.get("extra_features", [])))
    before = row.get("context", "") + row.get("wrapper_head", "")
    after = row["checked_broken_source"][len(before) + len(broken):]
    if row["checked_broken_source"] != before + broken + after or row["checked_source"] != before + fixed + after:
        return None
    return Task(**common, context=row.get("context", ""), before=before, after=after, crate_spot=spot_in(row, roots))


def spot_in(row: dict, roots: dict[str, str] | None) -> CrateSpot | None:
    """Where a row checked standalone sits in its crate, when the run says where that crate is."""
    spot, root = row.get("crate_spot"), (roots or {}).get(row.get("crate", ""))
    return CrateSpot(root=root, **spot) if spot and root else None


@dataclass
class Split:
    sft_rows: list[dict] = field(default_factory=list)
    rl_tasks: list[Task] = field(default_factory=list)
    heldout_tasks: list[Task] = field(default_factory=list)
    refused: int = 0  # held-out tasks dropped: their answer group is on the training side
    capped: int = 0  # tasks left out by [tasks] per_group

    def stats(self) -> dict:
        by_family = lambda tasks: {f: n for f in FAMILIES if (n := sum(t.family == f for t in tasks))}  # noqa: E731
        return {"sft_rows": len(self.sft_rows), "rl_tasks": len(self.rl_tasks),
                "heldout_tasks": len(self.heldout_tasks), "heldout_refused": self.refused, "capped": self.capped,
                "rl_by_family": by_family(self.rl_tasks), "heldout_by_family": by_family(self.heldout_tasks)}


def in_rl_share(declaration: str, rl_share: float, seed: int) -> bool:
    """Whether a declaration's tasks are RL tasks (seeded, by declaration)."""
    return unit(seed, "rl", declaration) < rl_share


def becomes_rl(task: Task, settings, seed: int) -> bool:
    """Whether the split makes this training-side task an RL task (its row's declaration is in the RL share)."""
    return in_rl_share(task.declaration or task.group, settings.rl_share, seed)


def split_rows(rows: list[dict], heldout_crates: set[str], rl_share: float, seed: int,
               families=FAMILIES, roots: dict[str, str] | None = None) -> Split:
    """Held-out crates' rows -> held-out tasks; the others by declaration -> RL tasks or SFT rows."""
    split = Split()
    tasks = [task_of(r, families, roots) for r in rows]  # each row's task, made once (None: it poses none)
    rl_units = {declaration_of(r) for r, t in zip(rows, tasks) if r.get("crate") not in heldout_crates
                and t is not None and in_rl_share(declaration_of(r), rl_share, seed)}
    trained = []  # (row, its task) of the rows that train
    for row, task in zip(rows, tasks):
        if row.get("crate") in heldout_crates:
            continue
        if task is not None and declaration_of(row) in rl_units:
            split.rl_tasks.append(task)
        else:
            trained.append((row, task))
    rl_groups = {t.group for t in split.rl_tasks}
    split.sft_rows = [r for r, _ in trained if row_group(r) not in rl_groups]
    split.rl_tasks += [t for r, t in trained if row_group(r) in rl_groups and t is not None]  # a twin of an RL answer
    seen = {row_group(r) for r in split.sft_rows} | rl_groups
    for row, task in zip(rows, tasks):
        if row.get("crate") in heldout_crates and task is not None:
            if task.group in seen:
                split.refused += 1
            else:
                split.heldout_tasks.append(task)
                if task.family == "codegen":  # a twin answer is one task (a repair task's mutants are many)
                    seen.add(task.group)
    return split


def capped(tasks: list[Task], per_group: int, seed: int) -> tuple[list[Task], list[Task]]:
    """At most `per_group` tasks of each answer group (a seeded choice, in the list's order), and the rest."""
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(task.group, []).append(task)
    chosen = {t.id for members in groups.values()
              for t in sorted(members, key=lambda t: unit(seed, "per-group", t.id))[:per_group]}
    return [t for t in tasks if t.id in chosen], [t for t in tasks if t.id not in chosen]


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


def heldout_set(settings, rows: list, seed: int) -> set[str]:
    """The held-out crates: those [tasks] names, else a seeded share of the crates the rows come
    from (None settings: none held out)."""
    if settings is None:
        return set()
    crates = sorted({crate for r in rows if (crate := (r.get("crate") if isinstance(r, dict) else getattr(r, "crate", None)))})
    return set(settings.heldout_crates) or {c for c in crates if unit(seed, "heldout", c) < settings.heldout_share}


def split_outputs(out_dir: str | Path, outputs: list, settings, seed: int, roots: dict[str, str] | None = None,
                  oracle=None) -> dict:
    """The pipeline's step: the rows of the lanes that pose tasks (lane outputs with `.rows`) are
    split ([tasks] settings); the lanes keep only their SFT rows, and the tasks files are
    written. Held-out crates: the ones named, else a seeded share of the crates present.
    `roots` (crate name -> folder) lets repair tasks say where they sit in their crate; with the
    Rust `oracle`, a task whose reference is a function of plain values gets tests of its values
    (synth/tasks/judge/same_values.py)."""
    rows = [r if isinstance(r, HeldRow) else r.model_dump(mode="json") for o in outputs for r in o.rows]  # read as JSON
    held = heldout_set(settings, rows, seed)
    split = split_rows(rows, held, settings.rl_share, seed, tuple(settings.families), roots)
    if settings.per_group:
        split.rl_tasks, extra_rl = capped(split.rl_tasks, settings.per_group, seed)
        split.heldout_tasks, extra_held = capped(split.heldout_tasks, settings.per_group, seed)
        split.capped = len(extra_rl) + len(extra_held)
    given = {name: with_same_value_tests(tasks, oracle) if oracle is not None else 0
             for name, tasks in (("rl", split.rl_tasks), ("heldout", split.heldout_tasks))}
    stats = {**write_tasks(out_dir, split), "same_value_tests": given}
    keep = {r["id"] for r in split.sft_rows}
    for output in outputs:
        output.rows = [r for r in output.rows if r.id in keep]
    return {**stats, "heldout_crates": sorted(held)}
