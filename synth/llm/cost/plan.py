"""Dry run: what a list of calls would cost, without making any.

Prompt tokens are counted on the real rendered messages. Completion lengths come from the
history of earlier runs (mean output tokens per model and prompt template, kept in the response
cache); without history, `max_tokens` (the worst case). Cached requests cost nothing."""
from __future__ import annotations

from collections import defaultdict

from synth.llm.request import LLMRequest
from synth.llm.cost.prices import PriceTable
from synth.llm.response_cache import ResponseCache
from synth.llm.cost.tokens import count_messages


def plan_calls(calls: list[tuple[str, LLMRequest]], prices: PriceTable, cache: ResponseCache,
               batch: bool = False) -> dict:
    """`calls`: (lane, request) pairs. Returns per lane and model, and totals."""
    rows: dict[tuple[str, str], dict] = defaultdict(lambda: {
        "items": 0, "calls": 0, "cache_hits": 0, "input_tokens": 0, "expected_output_tokens": 0.0,
        "expected_cost_usd": 0.0, "worst_case_usd": 0.0, "history": True})
    for lane, req in calls:
        row = rows[(lane, req.model)]
        row["items"] += 1
        if all(cache.get(req.key(i)) for i in range(req.n)):
            row["cache_hits"] += 1
            continue
        price = prices.price(req.model, free=req.free)
        tin = count_messages(list(req.messages), req.model, req.provider)
        mean = cache.mean_output(req.model, req.template_hash)
        if mean is None:
            row["history"] = False
        tout = (req.max_tokens if mean is None else min(mean, req.max_tokens)) * req.n
        row["calls"] += 1
        row["input_tokens"] += tin
        row["expected_output_tokens"] += tout
        row["expected_cost_usd"] += price.cost(tin, int(round(tout)), batch=batch)
        row["worst_case_usd"] += price.cost(tin, req.max_tokens * req.n, batch=batch)
    table = [{"stage": s, "model": m, **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}}
             for (s, m), r in sorted(rows.items())]
    return {
        "rows": table,
        "expected_cost_usd": round(sum(r["expected_cost_usd"] for r in rows.values()), 6),
        "worst_case_usd": round(sum(r["worst_case_usd"] for r in rows.values()), 6),
        "calls": sum(r["calls"] for r in rows.values()),
        "cache_hits": sum(r["cache_hits"] for r in rows.values()),
    }
