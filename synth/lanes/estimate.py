"""What a lane's `plan` gets and gives: the prices, the response cache's history, the last run's
measured attrition and compile rate, the plans of the lanes before it; and one plan row."""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_COMPILE_S = 0.001  # per candidate, batched (synth bench oracle measures ~0.7 ms)
# What a first run is priced from, before any run of its own measured anything: seconds a cold run
# took on the loop's 25 crates with the night's lanes (4.68 MB, 2 cores: 1,243 s at f60f01b; the
# figures `synth bench night` prints as first_run_reference; it prices other crates with these and
# prints the error: crates differ, 17.5 ms a mutant on 17 night crates). A run's own figures replace them.
FIRST_RUN_S = {
    "repair_crate": 2.95,  # a crate with mutants to compile (its copy set up, its dependencies checked)
    "repair_mutant": 0.0276,  # a mutant (made, compiled alone or in its crate, its row made)
    "doc_item": 0.0908,  # a documented function (checked, its row made)
    "written_row": 0.0032,  # a row through tasks, row files and the snapshot
}


@dataclass
class Estimate:
    prices: object  # PriceTable
    llm_cache: object  # ResponseCache (completion-length history, cache hits)
    measured: dict = field(default_factory=dict)  # lane -> its funnel in the last run's stats
    compile_rate: float = DEFAULT_COMPILE_S  # seconds per compiled candidate, as last measured
    planned: dict = field(default_factory=dict)  # lane -> (its plan row, its pending items)
    out: str = ""  # the run directory (earlier rows)
    plan_calls: object = None  # plan_calls(requests) -> cost of [(lane, LLMRequest)] (synth/llm/cost/plan.py)
    count_text: object = None  # count_text(text, model, provider) -> tokens (synth/llm/cost/tokens.py)


def plan_row(lane, model, items=0, calls=0.0, cache_hits=0, input_tokens=0, output_tokens=0.0, expected=0.0,
             worst=0.0, rows=0.0, compile_candidates=0.0, compile_s_per=DEFAULT_COMPILE_S, basis="default",
             sampling_s=0.0) -> dict:
    """One lane's plan: calls, tokens and dollars for paid models; seconds of compiling, and of
    sampling for a model in this process (free: time is what it costs)."""
    return {"stage": lane, "model": model, "items": items, "calls": round(calls, 1), "cache_hits": cache_hits,
            "input_tokens": int(input_tokens), "expected_output_tokens": round(output_tokens, 1),
            "expected_cost_usd": round(expected, 6), "worst_case_usd": round(worst, 6),
            "expected_rows": round(rows, 1), "compiler_candidates": round(compile_candidates, 1),
            "compiler_s": round(compile_candidates * compile_s_per, 3), "sampling_s": round(sampling_s, 1),
            "attrition": basis}
