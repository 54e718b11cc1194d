"""`synth eval`: real sampling (n samples per task at the profile's temperature, through the
serving template), every sample judged by the compiler in one batched call, pass@1 and pass@k
with the unbiased estimator, the compile rate, and an optional regression gate against a
baseline evaluation (paired bootstrap over tasks)."""
from __future__ import annotations

from pathlib import Path

from synth.jsonl import write_json
from synth.llm.local import LocalSampler
from synth.passk import Gate, bootstrap_gate, pass_at_k

from .chat import serve_prompt
from .dataset import fingerprint
from .profile import Eval
from synth.task import load_tasks

from .rewards import OracleJudge


def evaluate(settings: Eval, sampler, oracles: dict, tasks_path: str | Path | None = None) -> dict:
    if settings.samples < settings.k:
        raise ValueError(f"eval.samples ({settings.samples}) must be at least eval.k ({settings.k})")
    tasks_path = tasks_path or settings.tasks
    tasks = load_tasks(tasks_path)
    samples = {t.id: sampler.sample(serve_prompt(t.prompt), settings.samples) for t in tasks}
    judge = OracleJudge(oracles)
    flat_tasks = [t for t in tasks for _ in samples[t.id]]
    outcomes = judge.judge(flat_tasks, [c for t in tasks for c in samples[t.id]])
    per_task, start = {}, 0
    for task in tasks:
        mine = outcomes[start:start + len(samples[task.id])]
        start += len(mine)
        n, c = len(mine), sum(o.passed for o in mine)
        per_task[task.id] = {"n": n, "passed": c, "compiled": sum(o.compiled for o in mine),
                             "pass@1": pass_at_k(n, c, 1), f"pass@{settings.k}": pass_at_k(n, c, settings.k)}
    total = sum(p["n"] for p in per_task.values())
    summary = {"tasks": len(tasks), "samples": total,
               "pass@1": _mean(p["pass@1"] for p in per_task.values()),
               f"pass@{settings.k}": _mean(p[f"pass@{settings.k}"] for p in per_task.values()),
               "compile_rate": sum(p["compiled"] for p in per_task.values()) / max(1, total)}
    return {"summary": summary, "per_task": per_task, "settings": settings.model_dump(),
            "model": getattr(sampler, "name", "?"), "tasks_fingerprint": fingerprint([Path(tasks_path)]),
            "oracle": {"check_calls": judge.calls, "completions_checked": judge.checked}}


def gate_against(baseline: dict, result: dict, settings: Eval, seed: int = 0) -> Gate:
    scores = lambda r: {t: p["pass@1"] for t, p in r["per_task"].items()}  # noqa: E731
    return bootstrap_gate(scores(baseline), scores(result), settings.bootstrap, settings.confidence, seed)


def run_eval(settings: Eval, model_dir: str, adapter: str | None, oracles: dict, out: str | Path,
             baseline: dict | None = None, seed: int = 0, tasks_path: str | None = None) -> dict:
    sampler = LocalSampler(model_dir, adapter=adapter, max_new_tokens=settings.max_new_tokens,
                           temperature=settings.temperature, top_p=settings.top_p, seed=seed)
    result = evaluate(settings, sampler, oracles, tasks_path)
    if baseline is not None:
        result["gate"] = gate_against(baseline, result, settings, seed).as_dict()
    write_json(Path(out), result)
    return result


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0
