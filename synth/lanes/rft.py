"""The rejection-sampling lane (STaR / RFT / ReST-EM): k samples per task from the model being
trained or any other (synth/generation/rft.py), kept when they pass the judge `synth eval` uses.

Its tasks are the verified rows of the lanes that ran before it and pose tasks (doc lane: write a
documented function; repair lane: fix a mutant from its diagnostics; back-translation: write code
from an accepted instruction), on the training side only: a held-out crate's tasks are never
sampled. With a `local` model (`[models.NAME] provider = "local"`, a model folder and an adapter)
the policy samples in this process, free; its weights and adapter are in the lane's fingerprint,
so a new adapter samples every task again and the same one samples nothing. Each task is an item:
a changed function samples its own task again, nothing else. Kept samples are rows of task `rft`;
chosen/rejected pairs (with the rejected sample's verdict) go to pairs/rft.jsonl. With
`self_repair` tries, a failing attempt's verified fix is a row of task `selfrepair` (`origin:
"model"`, `made_by`, `fix`: `model` or `reference`, `similarity` to the attempt)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from synth.tasks.split import becomes_rl, capped, heldout_set, task_of
from synth.tasks.completion import answer_code
from synth.generation.settings import RftSettings
from synth.generation.rft import ApiSampler, PolicySampler, Repair, Sampled, pairs, run_rft, similarity
from synth.rows.rowfile import read_rows, row_files, rows_name
from synth.tasks.judge import Judge
from synth.tasks.judge.same_values import with_same_value_tests
from synth.llm.request import BudgetExceeded, CallFailed
from synth.prompting.templates import system_prompt
from synth.rows.row import Provenance, Row, make_row
from synth.rows.rejection import Rejection
from synth.rows.keys import fingerprint

from .base import Lane
from .estimate import plan_row

DEFAULT_SAMPLE_S = 1.0  # seconds per local sample before any run measured it (SmolLM2-135M on 2 cores: ~0.5-1)


class _SafeSampler:
    """A sampler whose refused or failed calls give no samples for that prompt, remembered (the
    task is left undone and the next run samples it)."""

    def __init__(self, inner):
        self.inner, self.name, self.failed = inner, inner.name, set()

    def complete(self, prompts: list[str], k: int) -> list[list[str]]:
        if not hasattr(self.inner, "sample"):  # in-process: nothing to refuse
            return self.inner.complete(prompts, k)
        out = []
        for prompt in prompts:
            try:
                out.append(self.inner.sample(prompt, k))
            except (BudgetExceeded, CallFailed):
                self.failed.add(prompt)
                out.append([])
        return out


def rft_tasks(rows: list[Row], families: list[str], held: set[str], roots: dict | None = None) -> list[tuple]:
    """(task, the row it comes from) for every row that poses a task of these families, outside the
    held-out crates; one task per id (`roots`: crate name -> folder, where its crate's tests run)."""
    out, seen = [], set()
    for row in rows:
        data = row.model_dump(mode="json")
        task = task_of(data, tuple(families), roots)
        if task is not None and task.crate not in held and task.id not in seen:
            seen.add(task.id)
            out.append((task, data))
    return out


class RftLane(Lane):
    name = "rft"
    Settings = RftSettings
    chunk = 64  # a local policy samples for minutes: a killed run keeps each 64 tasks it finished

    def skip_reason(self, settings, models, cap, done):
        spec = models.get(settings.model)
        if settings.enabled and spec is not None and spec.is_local:
            missing = [p for p in (spec.model, spec.adapter) if p and not Path(p).is_dir()]
            if missing:  # the first night: nothing trained yet
                return f"the policy {missing[0]} does not exist yet (a training run writes it; the next run samples it)"
        return super().skip_reason(settings, models, cap, done)

    def items(self, ctx, settings, decls):
        return self._tasks(ctx, settings, ctx.task_rows())

    def _tasks(self, ctx, settings, rows: list) -> list:
        held = heldout_set(ctx.tasks, rows, ctx.seed)
        roots = ctx.roots if settings.crate_tests else None  # (a task's key holds its folder only then)
        if settings.only_rl:  # exactly the RL tasks the run writes: [tasks] families, split, per_group cap
            if ctx.tasks is None:
                raise ValueError("[lanes.rft] only_rl needs the run to write tasks ([tasks] enabled)")
            tasks = [t for t, _ in rft_tasks(rows, ctx.tasks.families, held, roots) if becomes_rl(t, ctx.tasks, ctx.seed)]
            if ctx.tasks.per_group:  # the cap picks among each group's tasks of every family, as the split does
                tasks, _ = capped(tasks, ctx.tasks.per_group, ctx.seed)
            tasks = [t for t in tasks if t.family in settings.families]
        else:
            tasks = [task for task, _ in rft_tasks(rows, settings.families, held, roots)]
        if settings.limit:
            taken = {t.id for t in sorted(tasks, key=lambda t: fingerprint("rft-limit", ctx.seed, t.id))[:settings.limit]}
            tasks = [t for t in tasks if t.id in taken]  # in their own order
        return tasks

    def key(self, task):
        return fingerprint(task.model_dump_json())

    def lang(self, task):
        return task.lang

    def process(self, ctx, settings, todo, oracle, out):
        spec = ctx.models[settings.model]
        sampler = _SafeSampler(PolicySampler(spec, ctx.seed) if spec.is_local else ApiSampler(ctx.client, spec, ctx.seed))
        origin = {task.id: row for task, row in rft_tasks(ctx.task_rows(), settings.families, set())}
        tests = ctx.crate_tests() if settings.crate_tests else None  # a sample kept passes its crate's tests too
        judge = Judge({todo[0].lang: oracle}, ctx.crate_oracle, crate_tests=tests)
        key_of = {t.id: self.key(t) for t in todo}  # each item's key as it came (before its tests)
        todo = list(todo)
        with_same_value_tests(todo, oracle)  # a sample kept gives the reference's values, as eval judges
        result = run_rft(todo, sampler, judge, settings, on_item=ctx.ticker("rft"))
        done = {}
        for sampled in result.sampled:
            task = sampled.task
            if task.prompt in sampler.failed:
                continue
            rows = [rft_row(sampled, i, origin[task.id], sampler.name, ctx.seed) for i in sampled.kept]
            rows += [selfrepair_row(sampled, r, origin[task.id], sampler.name, ctx.seed) for r in sampled.repairs if r.fix]
            figures = sampled.figures(settings.k)
            rejected = [] if rows else [Rejection("no sample passed", "no sample passed", {"task": task.id, **figures})
                                        .to_json()]
            done[key_of[task.id]] = {"rows": rows, "pairs": pairs(sampled), "rejected": rejected, "figures": figures}
        return done

    def collect(self, stored, out):
        super().collect(stored, out)
        out.extra.setdefault("tasks", []).append(stored.get("figures", {}))

    def finish(self, ctx, settings, out, items):
        tasks = [t for t in out.extra.pop("tasks", []) if t]
        by_family = {}
        for family in sorted({t["family"] for t in tasks}):
            mine = [t for t in tasks if t["family"] == family]
            by_family[family] = {"tasks": len(mine), "samples": sum(t["samples"] for t in mine),
                                 "passed": sum(t["passed"] for t in mine), "kept": sum(t["kept"] for t in mine),
                                 f"pass@{settings.k}": round(sum(t[f"pass@{settings.k}"] for t in mine) / len(mine), 4),
                                 "solved_sometimes": sum(0 < t["passed"] < t["samples"] for t in mine)}
            if any(t.get("sent_back") for t in mine):  # self-repair: the attempts sent back, and how each was fixed
                by_family[family]["self_repair"] = {key: sum(t.get(key, 0) for t in mine)
                                                    for key in ("sent_back", "fixed_by_model", "fixed_by_reference")}
        out.extra["by_family"] = by_family
        out.rows.sort(key=lambda r: r.id)

    def plan(self, ctx, settings, pending, estimate):
        spec = ctx.models[settings.model]
        measured = estimate.measured.get("rft") or {}
        rows_per_task = measured["rows"] / max(1, measured["items"]) if measured.get("items") else 1.0
        # self-repair at most: every task's attempts rejected, each sent back for its tries
        retries = settings.self_repair * settings.self_repair_per_task
        samples = len(pending) * (settings.k + retries)
        if spec.is_local:  # free: what it costs is time, from the last run's seconds per sample
            done = sum(f.get("samples", 0) for f in (measured.get("by_family") or {}).values())
            per_sample = measured["seconds"] / done if done and measured.get("seconds") else DEFAULT_SAMPLE_S
            return plan_row("rft", spec.model, items=len(pending), rows=rows_per_task * len(pending),
                            compile_candidates=samples, compile_s_per=estimate.compile_rate,
                            sampling_s=samples * per_sample, basis="measured" if done else "default")
        requests = [("rft", dataclasses.replace(spec.request(t.prompt, None), n=settings.k)) for t in pending]
        if settings.self_repair:  # a feedback prompt: the task's context, an attempt (priced as the reference), errors
            requests += [("rft", dataclasses.replace(spec.request(f"{t.prompt}\n{t.reference}", None), n=settings.self_repair))
                         for t in pending for _ in range(settings.self_repair_per_task)]
        priced = estimate.plan_calls(requests) if requests else None
        return plan_row("rft", spec.model, items=len(pending), calls=priced["calls"] if priced else 0.0,
                        cache_hits=int(priced["cache_hits"]) if priced else 0,
                        input_tokens=sum(r["input_tokens"] for r in priced["rows"]) if priced else 0,
                        output_tokens=sum(r["expected_output_tokens"] for r in priced["rows"]) if priced else 0.0,
                        expected=priced["expected_cost_usd"] if priced else 0.0,
                        worst=priced["worst_case_usd"] if priced else 0.0, rows=rows_per_task * len(pending),
                        compile_candidates=samples, compile_s_per=estimate.compile_rate,
                        basis="measured" if measured else "default")

    def plan_items(self, ctx, settings, decls, estimate):
        """Before a run, the tasks are those of the rows the last run made (outside held-out crates)."""
        rows = [row for path in row_files(Path(estimate.out, "rows")) if rows_name(path) != "rft"
                for row in read_rows(path, Row)]
        return self._tasks(ctx, settings, rows)


def rft_row(sampled: Sampled, index: int, origin: dict, model: str, seed: int) -> dict:
    """A kept sample as a row: the task's prompt, the sample's code, the judge's verdict; checked
    where the task places answers (its crate, for a task verified there)."""
    task, outcome = sampled.task, sampled.outcomes[index]
    code = answer_code(sampled.completions[index])
    row = make_row(lang=task.lang, lane=f"{task.lang}_rft", task="rft", prompt=task.prompt, response=code,
                   verdict=outcome.verdict, system=system_prompt(), checked_source=task.source(code),
                   provenance=_provenance(origin, "rft", model, seed),
                   family=task.family, crate=task.crate, samples=len(sampled.outcomes),
                   samples_passed=sum(sampled.passed))
    return _placed(row, task, origin)


def selfrepair_row(sampled: Sampled, repair: Repair, origin: dict, model: str, seed: int) -> dict:
    """A fixed attempt as a row: the attempt with rustc's errors as the prompt, the fix (a try
    that passed, or the verified reference, as `fix` says) as the answer; `made_by` the model
    whose mistake it was."""
    task = sampled.task
    broken = answer_code(sampled.completions[repair.attempt])
    code = answer_code(repair.tries[repair.fixed]) if repair.fix == "model" else task.reference
    outcome = repair.outcomes[repair.fixed] if repair.fix == "model" else repair.reference
    row = make_row(lang=task.lang, lane=f"{task.lang}_rft", task="selfrepair", prompt=repair.task.prompt,
                   response=code, verdict=outcome.verdict, system=system_prompt(), checked_source=task.source(code),
                   checked_broken_source=task.source(broken), provenance=_provenance(origin, "selfrepair", model, seed),
                   family=task.family, crate=task.crate, broken=broken, origin="model", made_by=model, fix=repair.fix,
                   first_error=sampled.outcomes[repair.attempt].first_error, tries=len(repair.tries),
                   similarity=similarity(broken, code))
    return _placed(row, task, origin)


def _provenance(origin: dict, stage: str, model: str, seed: int) -> Provenance:
    prov = origin["provenance"]
    return Provenance(source_path=prov["source_path"], decl_hash=prov["decl_hash"], decl_id=prov.get("decl_id"),
                      stage=stage, model=model, seed=seed,
                      **{k: prov.get(k) for k in ("source_name", "source_version", "license")})


def _placed(row: Row, task, origin: dict) -> dict:
    """The row as JSON, verified in its crate where its task is."""
    if task.in_crate is not None:
        recipe = origin["verification"].get("crate")
        row.verification = row.verification.model_copy(update={"scope": "crate", "crate": recipe})
    return {**row.model_dump(mode="json"), "decl_key": origin.get("decl_key")}
