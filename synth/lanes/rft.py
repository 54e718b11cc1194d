"""The rejection-sampling lane: k samples per task, kept when the compiler accepts them
(synth/graphs/rft.py). Its tasks are the instructions the `backtranslate` lane accepted."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from pydantic import Field

from synth.graphs.rft import ApiSampler, RftConfig, run_rft, task_from_instruction
from synth.jsonl import read_jsonl
from synth.llm.request import BudgetExceeded, CallFailed
from synth.store import fingerprint
from synth.prompts import template_hash
from synth.rows import Row

from .base import Lane, StageSettings, item_key, stamped, toolchain_of
from .estimate import plan_row


class RftSettings(StageSettings):
    model: str = ""
    k: int = Field(4, gt=0)
    cap_per_task: int = Field(2, gt=0)


class _SafeSampler:
    """A sampler that turns a refused or failed call into no samples, and remembers it."""

    def __init__(self, inner):
        self.inner, self.name, self.failed = inner, inner.name, set()

    def sample(self, prompt: str, k: int) -> list[str]:
        try:
            return self.inner.sample(prompt, k)
        except (BudgetExceeded, CallFailed):
            self.failed.add(prompt)
            return []


def rft_tasks(decls: list, codegen_rows: list[Row]) -> list:
    """An RFT task per accepted back-translated instruction."""
    by_key = {(d.path, d.hash): d for d in decls}
    tasks = []
    for row in codegen_rows:
        decl = by_key.get((row.provenance.source_path, row.provenance.decl_hash))
        if decl is not None and getattr(row, "instruction", None):
            tasks.append(task_from_instruction(decl, row.instruction))
    return tasks


class RftLane(Lane):
    name = "rft"
    Settings = RftSettings
    needs = ("backtranslate",)

    def items(self, ctx, settings, decls):
        return rft_tasks(decls, ctx.outputs["backtranslate"].rows)

    def key(self, task):
        return fingerprint(item_key(task.decl), task.prompt)

    def lang(self, task):
        return task.decl.lang

    def fingerprint(self, ctx, settings, lang, oracle):
        return fingerprint("rft", ctx.models[settings.model], settings.k, settings.cap_per_task, ctx.seed,
                           toolchain_of(oracle), template_hash("rft"))

    def process(self, ctx, settings, todo, oracle, out):
        sampler = _SafeSampler(ApiSampler(ctx.client, ctx.models[settings.model]))
        result = run_rft(todo, sampler, oracle, RftConfig(k=settings.k, cap_per_task=settings.cap_per_task,
                                                          seed=ctx.seed), on_item=ctx.ticker("rft"))
        done = {}
        for task in todo:
            if task.prompt in sampler.failed:
                continue
            rows = [r for r in result.rows if r.prompt == task.prompt]
            pairs = [p for p in result.pairs if p["task"] == task.id and p["prompt"] == task.prompt]
            stats = [t for t in result.tasks if t["task"] == task.id]
            rejected = [] if rows else [{"task": task.id, "reason": "no sample passed", **(stats[0] if stats else {})}]
            done[self.key(task)] = {"rows": [stamped(r, task.decl) for r in rows], "pairs": pairs, "rejected": rejected}
        return done

    def plan(self, ctx, settings, pending, estimate):
        spec = ctx.models[settings.model]

        def priced(tasks):
            requests = [("rft", dataclasses.replace(spec.request(t.prompt, "rft"), n=settings.k)) for t in tasks]
            return estimate.plan_calls(requests) if requests else None
        exact = priced(pending)
        # Tasks the back-translation planned before this is expected to add: its pending declarations
        # with an instruction of the usual length, scaled by the expected acceptance.
        bt_row, bt_pending = estimate.planned.get("backtranslate", (None, []))
        writer = ctx.models[ctx.settings["backtranslate"].model]
        typical = "x " * int(estimate.llm_cache.mean_output(writer.model, template_hash("backtranslate_instruction"))
                             or 60)
        future = [task_from_instruction(d, typical) for d in bt_pending]
        guess = priced(future)
        share = bt_row["expected_rows"] / len(future) if future else 0.0

        def part(plan, key, scale=1.0):
            return scale * (plan[key] if plan else 0.0)

        def tokens(plan, key, scale=1.0):
            return scale * sum(r[key] for r in plan["rows"]) if plan else 0.0
        items = len(pending) + share * len(future)
        measured = estimate.measured.get("rft")
        keep = (measured["rows"] / max(1, measured["items"])) if measured else 1.0
        return plan_row("rft", spec.model, items=int(round(items)),
                        calls=part(exact, "calls") + part(guess, "calls", share),
                        cache_hits=int(part(exact, "cache_hits")),
                        input_tokens=tokens(exact, "input_tokens") + tokens(guess, "input_tokens", share),
                        output_tokens=tokens(exact, "expected_output_tokens") +
                        tokens(guess, "expected_output_tokens", share),
                        expected=part(exact, "expected_cost_usd") + part(guess, "expected_cost_usd", share),
                        worst=part(exact, "worst_case_usd") + part(guess, "worst_case_usd", share),
                        rows=items * keep, compile_candidates=items * settings.k, compile_s_per=estimate.compile_rate,
                        basis="measured" if measured else "default")

    def plan_items(self, ctx, settings, decls, estimate):
        """Before a run, the tasks are those of the codegen rows already made."""
        codegen = Path(estimate.out) / "rows" / "codegen.jsonl"
        return rft_tasks(decls, read_jsonl(codegen, Row)) if codegen.exists() else []
