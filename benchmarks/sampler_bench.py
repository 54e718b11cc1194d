"""`synth bench sampler`: the local model's greedy answers to the loop's held-out prompts (the
profile's model, batch size and answer length), with shared starts computed once and without,
side by side in one run (alternating, medians): seconds, prompt tokens run through the model, and
how many answers are the same. Needs `make model` and a loop run's tasks (`synth run --config
examples/loop/synth.toml`)."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks.loop_commands import PROFILE


def run_sampler_bench(n: int, repeats: int, profile: Path = PROFILE, tasks_path: str | None = None) -> dict:
    from synth.llm import local
    from synth.prompting.chat import serve_prompt
    from synth.tasks.task import load_tasks
    from training.run.profile import load_profile

    settings = load_profile(profile)
    tasks_path = tasks_path or settings.eval.tasks
    if not Path(tasks_path).is_file():
        raise FileNotFoundError(f"no tasks at {tasks_path} (run `synth run --config examples/loop/synth.toml`)")
    prompts = [serve_prompt(t.prompt) for t in load_tasks(tasks_path)][:n]
    sampler = local.LocalSampler(settings.model, settings.eval.dtype, max_new_tokens=settings.eval.max_new_tokens)
    seconds: dict[str, list[float]] = {"shared": [], "alone": []}
    answers, prefilled = {}, {}
    least = local.MIN_SHARED
    try:
        for _ in range(repeats):
            for arm in seconds:  # alternating: the machine's drift falls on both
                local.MIN_SHARED = least if arm == "shared" else 10**9
                sampler.prefill_tokens = 0
                start = time.perf_counter()
                answers[arm] = sampler.greedy(prompts, settings.eval.batch_size)
                seconds[arm].append(time.perf_counter() - start)
                prefilled[arm] = sampler.prefill_tokens
    finally:
        local.MIN_SHARED = least
    median = {arm: statistics.median(s) for arm, s in seconds.items()}
    return {"prompts": len(prompts), "prompt_tokens": prefilled["alone"], "batch_size": settings.eval.batch_size,
            "max_new_tokens": settings.eval.max_new_tokens, "repeats": repeats,
            "prefill_tokens": prefilled, "prefill_share_skipped": round(1 - prefilled["shared"] / prefilled["alone"], 3),
            "seconds_median": {arm: round(s, 1) for arm, s in median.items()},
            "speedup": round(median["alone"] / median["shared"], 2),
            "same_answers": sum(a == b for a, b in zip(answers["shared"], answers["alone"]))}


def bench(args) -> dict:
    """`synth bench sampler` (`--n`: the first N held-out prompts, 96; `--repeats`: runs of each arm, 2)."""
    return run_sampler_bench(n=args.n if args.n != 500 else 96, repeats=args.repeats if args.repeats != 5 else 2)
