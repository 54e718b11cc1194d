"""The back-translation lane: a compile-clean declaration -> an instruction (LLM) -> code
regenerated from it -> the compiler (synth/generation/backtranslate.py). Its rows are `codegen`
rows; `rft` turns their instructions into tasks. Planned from the attrition of the last run."""
from __future__ import annotations

from collections import Counter

from synth.generation.settings import BacktranslateSettings

from synth.generation.backtranslate import (instruction_prompt, judge_prompt, named_models, regenerate_prompt, run_backtranslation)
from synth.prompting.templates import template_hash

from .base import Lane, by_declaration, decl_key
from .estimate import plan_row

KINDS = {"rust": ("fn", "method"), "vox": ("fn",)}
TEMPLATES = {"write": "backtranslate_instruction", "regenerate": "backtranslate_regenerate",
             "judge": "backtranslate_judge"}
# Without an earlier run: one pass through write, regenerate and judge for every item.
DEFAULT_ATTRITION = {"write": 1.0, "regenerate": 1.0, "judge": 1.0, "accept": 1.0}


class BacktranslateLane(Lane):
    name = "backtranslate"
    Settings = BacktranslateSettings
    poses_tasks = True

    def items(self, ctx, settings, decls):
        items = sorted((d for d in decls if d.kind in KINDS.get(d.lang, ()) and not d.near_parse_error),
                       key=decl_key)  # by place: an edit elsewhere does not change which ones `limit` takes
        return items[:settings.limit] if settings.limit else items

    def process(self, ctx, settings, todo, oracle, out):
        result = run_backtranslation(todo, ctx.client, oracle, settings, ctx.models, ctx.seed,
                                     checkpoint_path=f"{ctx.cache_dir}/graphs.sqlite",
                                     on_item=ctx.ticker("backtranslate"))
        calls = Counter(out.extra.get("node_calls", {}))
        calls.update({k: result.stats[k] for k in ("write", "regenerate", "judge")})
        out.extra["node_calls"] = dict(calls)
        out.extra["accepted"] = out.extra.get("accepted", 0) + len(result.rows)
        return by_declaration(todo, result.rows, result.rejected, skip=set(result.undone))

    def finish(self, ctx, settings, out, items):
        out.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))

    def plan(self, ctx, settings, pending, estimate):
        writer = ctx.models[settings.model]
        measured = estimate.measured.get("backtranslate")
        rates = None
        if measured and measured.get("node_calls") and measured.get("processed"):
            rates = attrition(Counter(measured["node_calls"]), measured["processed"], measured["accepted"])
        cost = plan_backtranslation(pending, settings, ctx.models, estimate.prices, estimate.llm_cache, estimate.count_text, rates)
        first = estimate.plan_calls([("backtranslate", writer.request(instruction_prompt(d, ""), TEMPLATES["write"]))
                                     for d in pending])
        calls = sum(cost["expected_calls"].values())
        return plan_row("backtranslate", writer.model, items=len(pending),
                        calls=max(0.0, calls - first["cache_hits"]), cache_hits=first["cache_hits"],
                        input_tokens=sum(r["input_tokens"] for r in first["rows"]) * max(1.0, calls / max(1, len(pending))),
                        output_tokens=sum(r["expected_output_tokens"] for r in first["rows"]),
                        expected=cost["expected_cost_usd"], worst=cost["worst_case_usd"], rows=cost["expected_rows"],
                        compile_candidates=2 * len(pending), compile_s_per=estimate.compile_rate,
                        basis=cost["attrition"])


def attrition(stats: Counter, items: int, accepted: int) -> dict:
    """Calls per item of each node, and the share of items that became rows, from a run's stats."""
    items = max(1, items)
    return {"write": stats["write"] / items, "regenerate": stats["regenerate"] / items,
            "judge": stats["judge"] / items, "accept": accepted / items}


def plan_backtranslation(decls: list, settings: BacktranslateSettings, models: dict, prices, cache, count_text,
                         measured: dict | None = None) -> dict:
    """Expected and worst-case cost of back-translating `decls`: calls per item from the measured
    attrition (else one pass), tokens from the real prompts, completion lengths from history."""
    rates = measured or DEFAULT_ATTRITION
    writer, regenerator, judge = named_models(settings, models)
    specs = {"write": writer, "regenerate": regenerator or writer, "judge": judge or writer}
    mean_out = {node: cache.mean_output(spec.model, template_hash(TEMPLATES[node])) or spec.max_tokens
                for node, spec in specs.items()}
    expected = worst = 0.0
    calls = Counter()
    for decl in decls:
        instruction = "x " * int(mean_out["write"])  # the instruction is not written yet: its usual length
        prompts = {"write": instruction_prompt(decl, ""), "regenerate": regenerate_prompt(decl, instruction),
                   "judge": judge_prompt(decl, instruction)}
        for node, spec in specs.items():
            price = prices.price(spec.model, free=spec.free)
            tin = count_text(prompts[node], spec.model, spec.provider) + 8
            expected += rates[node] * price.cost(tin, int(mean_out[node]))
            worst += settings.max_attempts * price.cost(tin, spec.max_tokens)
            calls[node] += rates[node]
    return {"items": len(decls), "expected_calls": {k: round(v, 1) for k, v in calls.items()},
            "expected_rows": round(rates["accept"] * len(decls), 1), "expected_cost_usd": round(expected, 6),
            "worst_case_usd": round(worst, 6), "attrition": "measured" if measured else "default"}
