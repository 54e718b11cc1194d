"""Planning the graphs: expected calls per item come from the attrition measured in an earlier
run (how often instructions were rewritten, how often the judge was asked); token counts from
the real prompts; completion lengths from the response cache's history. Makes no call."""
from __future__ import annotations

from collections import Counter

from synth.extract.model import Declaration
from synth.llm.prices import PriceTable
from synth.llm.response_cache import ResponseCache
from synth.llm.tokens import count_text
from synth.prompts import template_hash

from .backtranslate import BacktranslateConfig, instruction_prompt, judge_prompt, regenerate_prompt

# Without an earlier run: one pass through write, regenerate and judge for every item.
DEFAULT_ATTRITION = {"write": 1.0, "regenerate": 1.0, "judge": 1.0, "accept": 1.0}


def attrition(stats: Counter, items: int, accepted: int) -> dict:
    """Calls per item of each node, and the share of items that became rows, from a run's stats."""
    items = max(1, items)
    return {"write": stats["write"] / items, "regenerate": stats["regenerate"] / items,
            "judge": stats["judge"] / items, "accept": accepted / items}


def plan_backtranslation(decls: list[Declaration], config: BacktranslateConfig, prices: PriceTable,
                         cache: ResponseCache, measured: dict | None = None) -> dict:
    rates = measured or DEFAULT_ATTRITION
    specs = {"write": config.writer, "regenerate": config.regenerator or config.writer,
             "judge": config.judge or config.writer}
    templates = {"write": "backtranslate_instruction", "regenerate": "backtranslate_regenerate",
                 "judge": "backtranslate_judge"}
    mean_out = {node: cache.mean_output(spec.model, template_hash(templates[node])) or spec.max_tokens
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
            worst += config.max_attempts * price.cost(tin, spec.max_tokens)
            calls[node] += rates[node]
    return {"items": len(decls), "expected_calls": {k: round(v, 1) for k, v in calls.items()},
            "expected_rows": round(rates["accept"] * len(decls), 1), "expected_cost_usd": round(expected, 6),
            "worst_case_usd": round(worst, 6), "attrition": "measured" if measured else "default"}
