"""`synth plan --config`: what `synth run` would do now, per lane and model, without a call or a
compile. Items are those the item store has no answer for (what a run would process); calls and
tokens come from the real prompts where they can be built and from the attrition measured in the
last run otherwise; completion lengths from the response cache's history; compiler time from the
last run's measured rate. Each lane prices itself (`Lane.plan`); this only loops over them."""
from __future__ import annotations

from pathlib import Path

from synth.fit import Fit
from synth.config import SynthConfig
from synth.extract.extract import extract_sources
from synth.llm.plan import plan_calls
from synth.llm.prices import PriceTable
from synth.llm.response_cache import ResponseCache
from synth.llm.tokens import count_text
from synth.store import ItemStore

from .setup import last_stats

TOTALS = ("items", "calls", "cache_hits", "input_tokens", "expected_output_tokens", "expected_cost_usd",
          "worst_case_usd", "expected_rows", "compiler_candidates", "compiler_s", "sampling_s")


def plan_run(config: SynthConfig, max_spend: float | None = None) -> dict:
    from oracles.cache import VerdictCache
    from oracles.factory import build_oracles, crate_oracle
    from synth.lanes import LANES
    from synth.lanes.base import RunContext, pending
    from synth.lanes.estimate import DEFAULT_COMPILE_S, Estimate

    cache_dir = Path(config.run.cache_dir)
    store = ItemStore(cache_dir / "items")
    notes: list[str] = []
    decls, _ = extract_sources(config.sources)
    verdicts = VerdictCache(cache_dir / "verdicts")
    oracles = build_oracles({d.lang for d in decls}, config.oracles, verdicts, notes)
    ctx = RunContext(store=store, oracles=oracles, client=None, seed=config.run.seed, models=config.models,
                     settings=config.lane_settings(), fit=Fit(config.tokens),
                     tasks=config.tasks if config.writes_tasks(LANES) else None,
                     task_lanes=tuple(name for name, lane in LANES.items() if lane.poses_tasks),
                     cache_dir=str(cache_dir), out=config.run.out,
                     attention=notes, crate_oracle=crate_oracle(oracles, config.oracles, verdicts, notes))
    measured = ((last_stats(config.run.out) or {}).get("summary") or {}).get("stages", {})
    repair = measured.get("repair") or {}
    compile_rate = DEFAULT_COMPILE_S
    if repair.get("candidates_compiled") and repair.get("seconds"):
        compile_rate = repair["seconds"] / repair["candidates_compiled"]
    prices = PriceTable(config.run.prices) if config.run.prices else PriceTable()
    llm_cache = ResponseCache(cache_dir / "llm")
    estimate = Estimate(prices=prices, llm_cache=llm_cache, measured=measured, compile_rate=compile_rate,
                        out=config.run.out, plan_calls=lambda requests: plan_calls(requests, prices, llm_cache),
                        count_text=count_text)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    rows, skipped = [], {}
    for name, lane in LANES.items():
        settings = ctx.settings[name]
        why = lane.skip_reason(settings, config.models, cap, estimate.planned)
        if why:
            skipped[name] = why
            continue
        todo = pending(lane, ctx, settings, lane.plan_items(ctx, settings, decls, estimate))
        row = lane.plan(ctx, settings, todo, estimate)
        estimate.planned[name] = (row, todo)
        rows.append(row)
    store.close()
    if ctx.crate_oracle is not None:
        ctx.crate_oracle.close()
    total = {k: round(sum(r[k] for r in rows), 6) for k in TOTALS}
    return {"stages": rows, "total": total, "skipped": skipped, "cap_usd": cap, "notes": notes,
            "fits_cap": total["worst_case_usd"] <= cap or total["worst_case_usd"] == 0}
