"""`synth plan --config`: what `synth run` would do now, per stage and model, without a call or a
compile. Items are those the item store has no answer for (what a run would process); calls and
tokens come from the real prompts where they can be built (back-translation's first request,
every tool-call request) and from the attrition measured in the last run otherwise; completion
lengths from the response cache's history; compiler time from the last run's measured rate."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from synth.config import SynthConfig
from synth.llm.prices import PriceTable
from synth.llm.response_cache import ResponseCache
from synth.prompts import template_hash

from .run import _model_specs, build_oracles, extract_sources, last_stats
from .stages import (Context, backtranslate_fingerprint, backtranslate_items, item_key, repair_fingerprint,
                     repair_items,
                     rft_fingerprint, rft_task_key, rft_tasks, toolcalls_fingerprint)
from .store import ItemStore

DEFAULT_COMPILE_S = 0.001  # per candidate, batched (synth bench oracle measures ~0.7 ms)
DEFAULT_REPAIR = {"candidates_per_item": 12.0, "rows_per_item": 4.0}


def _row(stage, model, items=0, calls=0.0, cache_hits=0, input_tokens=0, output_tokens=0.0, expected=0.0,
         worst=0.0, rows=0.0, compile_candidates=0.0, compile_s_per=DEFAULT_COMPILE_S, basis="default"):
    return {"stage": stage, "model": model, "items": items, "calls": round(calls, 1), "cache_hits": cache_hits,
            "input_tokens": int(input_tokens), "expected_output_tokens": round(output_tokens, 1),
            "expected_cost_usd": round(expected, 6), "worst_case_usd": round(worst, 6),
            "expected_rows": round(rows, 1), "compiler_candidates": round(compile_candidates, 1),
            "compiler_s": round(compile_candidates * compile_s_per, 3), "attrition": basis}


def plan_run(config: SynthConfig, max_spend: float | None = None) -> dict:
    from oracles.cache import VerdictCache
    from synth.graphs.backtranslate import BacktranslateConfig, instruction_prompt
    from synth.graphs.plan import attrition, plan_backtranslation
    from synth.llm.plan import plan_calls

    cache_dir = Path(config.run.cache_dir)
    store = ItemStore(cache_dir / "items")
    llm_cache = ResponseCache(cache_dir / "llm")
    prices = PriceTable(config.run.prices) if config.run.prices else PriceTable()
    notes: list[str] = []
    decls, _ = extract_sources(config)
    oracles = build_oracles(config, {d.lang for d in decls}, VerdictCache(cache_dir / "verdicts"), notes)
    ctx = Context(store=store, oracles=oracles, client=None, seed=config.run.seed)
    specs = _model_specs(config)
    last = last_stats(config.run.out) or {}
    measured = (last.get("summary") or {}).get("stages", {})
    compile_rate = DEFAULT_COMPILE_S
    repair_measured = measured.get("repair") or {}
    if repair_measured.get("candidates_compiled") and repair_measured.get("seconds"):
        compile_rate = repair_measured["seconds"] / repair_measured["candidates_compiled"]
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    rows, skipped = [], {}

    if config.stages.repair.enabled:
        pending = []
        for lang, oracle in oracles.items():
            if lang not in ("rust", "vox"):  # rust_crate: the Rust oracle's helper, not a language
                continue
            fp = repair_fingerprint(ctx, lang, config.stages.repair, oracle)
            pending += [d for d in repair_items(decls, lang) if store.get("repair", fp, item_key(d)) is None]
        rep = measured.get("repair")
        basis, rates = "default", dict(DEFAULT_REPAIR)
        if rep and rep.get("processed"):
            basis = "measured"
            rates = {"candidates_per_item": rep.get("candidates_compiled", 0) / rep["processed"] or
                     DEFAULT_REPAIR["candidates_per_item"], "rows_per_item": rep["rows"] / max(1, rep["items"])}
        rows.append(_row("repair", "-", items=len(pending), rows=rates["rows_per_item"] * len(pending),
                         compile_candidates=rates["candidates_per_item"] * len(pending), compile_s_per=compile_rate,
                         basis=basis))

    paid_ok = cap > 0
    bt_expected_rows, bt_pending = 0.0, []
    stage = config.stages.backtranslate
    if stage.enabled and (paid_ok or config.models[stage.model].free):
        oracle = oracles.get("rust") or next(iter(oracles.values()), None)
        fp = backtranslate_fingerprint(ctx, stage, specs, oracle) if oracle else ""
        pending = [d for d in backtranslate_items(decls, stage.limit)
                   if store.get("backtranslate", fp, item_key(d)) is None]
        bt_pending = pending
        bt_config = BacktranslateConfig(writer=specs[stage.model], judge=specs[stage.judge] if stage.judge else None,
                                        max_attempts=stage.max_attempts, seed=config.run.seed)
        rates = None
        bt = measured.get("backtranslate")
        if bt and bt.get("node_calls") and bt.get("processed"):
            from collections import Counter
            rates = attrition(Counter(bt["node_calls"]), bt["processed"], bt["accepted"])
        estimate = plan_backtranslation(pending, bt_config, prices, llm_cache, rates)
        first = plan_calls([("backtranslate", specs[stage.model].request(instruction_prompt(d, ""),
                                                                         "backtranslate_instruction"))
                            for d in pending], prices, llm_cache)
        calls = sum(estimate["expected_calls"].values())
        bt_expected_rows = estimate["expected_rows"]
        rows.append(_row("backtranslate", specs[stage.model].model, items=len(pending),
                         calls=max(0.0, calls - first["cache_hits"]), cache_hits=first["cache_hits"],
                         input_tokens=sum(r["input_tokens"] for r in first["rows"]) * max(1.0, calls / max(1, len(pending))),
                         output_tokens=sum(r["expected_output_tokens"] for r in first["rows"]),
                         expected=estimate["expected_cost_usd"], worst=estimate["worst_case_usd"],
                         rows=bt_expected_rows, compile_candidates=2 * len(pending), compile_s_per=compile_rate,
                         basis=estimate["attrition"]))
    elif stage.enabled:
        skipped["backtranslate"] = "needs a paid model and the spending cap is $0"

    stage = config.stages.rft
    if stage.enabled and (paid_ok or config.models[stage.model].free) and "backtranslate" not in skipped:
        from synth.jsonl import read_jsonl
        from synth.rows import Row
        codegen = Path(config.run.out) / "rows" / "codegen.jsonl"
        known = rft_tasks(decls, read_jsonl(codegen, Row)) if codegen.exists() else []
        oracle = oracles.get("rust") or next(iter(oracles.values()), None)
        fp = rft_fingerprint(ctx, stage, specs, oracle) if oracle else ""
        pending = [t for t in known if store.get("rft", fp, rft_task_key(t)) is None]
        spec = specs[stage.model]

        def priced(tasks):
            requests = [("rft", dataclasses.replace(spec.request(t.prompt, "rft"), n=stage.k)) for t in tasks]
            return plan_calls(requests, prices, llm_cache) if requests else None
        exact = priced(pending)
        # Tasks the back-translation above is expected to add: its pending declarations with an
        # instruction of the usual length, scaled by the expected acceptance.
        from synth.graphs.rft import task_from_instruction
        typical = "x " * int(llm_cache.mean_output(specs[config.stages.backtranslate.model].model,
                                                   template_hash("backtranslate_instruction")) or 60)
        future = [task_from_instruction(d, typical) for d in bt_pending]
        guess = priced(future)
        share = bt_expected_rows / len(future) if future else 0.0

        def part(plan, key, scale=1.0):
            return scale * (plan[key] if plan else 0.0)

        def tokens(plan, key, scale=1.0):
            return scale * sum(r[key] for r in plan["rows"]) if plan else 0.0
        items = len(pending) + share * len(future)
        rft_measured = measured.get("rft")
        keep = (rft_measured["rows"] / max(1, rft_measured["items"])) if rft_measured else 1.0
        rows.append(_row("rft", spec.model, items=int(round(items)),
                         calls=part(exact, "calls") + part(guess, "calls", share),
                         cache_hits=int(part(exact, "cache_hits")),
                         input_tokens=tokens(exact, "input_tokens") + tokens(guess, "input_tokens", share),
                         output_tokens=tokens(exact, "expected_output_tokens") +
                         tokens(guess, "expected_output_tokens", share),
                         expected=part(exact, "expected_cost_usd") + part(guess, "expected_cost_usd", share),
                         worst=part(exact, "worst_case_usd") + part(guess, "worst_case_usd", share),
                         rows=items * keep, compile_candidates=items * stage.k, compile_s_per=compile_rate,
                         basis="measured" if rft_measured else "default"))
    elif stage.enabled:
        skipped["rft"] = "needs a paid model and the spending cap is $0" if not paid_ok else "needs backtranslate"

    stage = config.stages.toolcalls
    if stage.enabled and (paid_ok or config.models[stage.model].free):
        import json

        from synth.prompts import template
        from synth.tools.definitions import load_tools_file, validate_definitions
        from .store import fingerprint
        raw = load_tools_file(stage.tools)
        tools, _ = validate_definitions(raw)
        spec = specs[stage.model]
        done = store.get("toolcalls", toolcalls_fingerprint(ctx, stage, specs), fingerprint(raw)) is not None
        requests = [] if done else [
            ("toolcalls", spec.request(template("toolcall").format(variant=v + 1, description=t.description,
                                                                   schema=json.dumps(t.schema, sort_keys=True)),
                                       "toolcall"))
            for t in tools for v in range(stage.per_tool)]
        exact = plan_calls(requests, prices, llm_cache) if requests else {"rows": [], "expected_cost_usd": 0.0,
                                                                          "worst_case_usd": 0.0, "cache_hits": 0,
                                                                          "calls": 0}
        tc = measured.get("toolcalls")
        per_request = (tc["rows"] / max(1, tc["items"] * stage.per_tool)) if tc else 2.0
        rows.append(_row("toolcalls", spec.model, items=0 if done else len(tools), calls=exact["calls"],
                         cache_hits=exact["cache_hits"], input_tokens=sum(r["input_tokens"] for r in exact["rows"]),
                         output_tokens=sum(r["expected_output_tokens"] for r in exact["rows"]),
                         expected=exact["expected_cost_usd"], worst=exact["worst_case_usd"],
                         rows=per_request * len(requests), basis="measured" if tc else "default"))
    elif stage.enabled:
        skipped["toolcalls"] = "needs a paid model and the spending cap is $0"

    for name in ("backtranslate", "rft", "toolcalls"):
        if not getattr(config.stages, name).enabled:
            skipped.setdefault(name, "disabled in the config")
    store.close()
    keys = ("items", "calls", "cache_hits", "input_tokens", "expected_output_tokens", "expected_cost_usd",
            "worst_case_usd", "expected_rows", "compiler_candidates", "compiler_s")
    total = {k: round(sum(r[k] for r in rows), 6) for k in keys}
    return {"stages": rows, "total": total, "skipped": skipped, "cap_usd": cap, "notes": notes,
            "fits_cap": total["worst_case_usd"] <= cap or total["worst_case_usd"] == 0}
