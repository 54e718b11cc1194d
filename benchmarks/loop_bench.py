"""`synth bench loop`: does verified data make a real model compile more? On this CPU, one command:
doc-lane data from the real-crate corpus (else examples/rust), the SmolLM2-135M base (`make
model`), LoRA SFT on it, then GRPO with the compiler reward from the SFT model, each evaluated
greedily on the same held-out tasks from crates not used in training. Each change is reported
with a paired-bootstrap interval over the tasks; `seconds` says where the time went."""
from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path("/usr/share/cargo/registry")
CRATES = Path(__file__).with_name("loop_crates.txt")  # pinned: which corpus crates train, which are held out


def pinned_crates() -> tuple[list[Path], list[Path]]:
    """(training crates, held-out crates) of the pinned list that are installed; training adds the
    real-crate corpus (benchmarks/real_crates.txt), whose functions mostly verify only in their crate."""
    from benchmarks.crates_bench import corpus_crates
    train, heldout = [], []
    for line in CRATES.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            role, name = line.split()
            if (CORPUS / name).is_dir():
                (heldout if role == "heldout" else train).append(CORPUS / name)
    held = {p.name for p in heldout}
    train += [p for p in corpus_crates(str(CORPUS)) if p.name not in held and p not in train]
    return train, heldout


def default_sources() -> tuple[list[Path], list[Path], str]:
    train, heldout = pinned_crates()
    if train and heldout:
        return train, heldout, "corpus"
    return [REPO / "examples" / "rust"], [], "examples"


def build_data(train_paths, heldout_paths, oracle, tokenizer, max_prompt: int, max_answer: int, seed: int,
               rl_share: float, crate_oracle=None) -> tuple:
    """Doc-lane rows of every source, within the token limits, with the crate tests that pass on
    their reference answers; split into SFT rows, RL tasks and held-out tasks."""
    from synth.assemble.tasks import attach_tests, split_rows
    from synth.docs.documented import doc_lane, reference_answer
    from synth.extract.model import crate_name
    from synth.extract.extract import ExtractOptions, extract_paths

    options = ExtractOptions(include_tests=True, jobs=1)
    decls = extract_paths([*train_paths, *heldout_paths], options).declarations
    tests = [d for d in decls if d.is_test]
    heldout_crates = {p.name for p in map(Path, heldout_paths)}
    if not heldout_paths:  # examples only: one crate, held out by file instead
        for d in decls:
            d.crate_root = f"{d.crate_root}/{d.path}"
        heldout_crates = {f"{d.crate_root}".rsplit("/", 1)[-1] for d in decls if _unit_hash(d.path) < 0.3}
    code = [d for d in decls if not d.is_test]
    documented = [d for d in code if d.doc.strip() and d.kind in ("fn", "method")]
    held = [d for d in code if crate_name(d) in heldout_crates]
    size = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    # only what fits the trainer's limits is worth a compile (most of a cold run's data time)
    fits_limits = lambda item: size(item.prompt) <= max_prompt and size(item.answer) <= max_answer  # noqa: E731
    rows, rejected = doc_lane(held, oracle, seed, keep=fits_limits)  # held-out tasks must be checkable standalone
    more, rejected_more = doc_lane([d for d in code if crate_name(d) not in heldout_crates], oracle, seed,
                                   crate_oracle if heldout_paths else None, keep=fits_limits)
    rows, rejected = rows + more, rejected + rejected_more
    fits = [r.model_dump(mode="json") for r in rows]
    with_tests = attach_tests(fits, tests, oracle)
    split = split_rows(fits, heldout_crates, rl_share, seed)
    doc_figures = doc_in_answer(documented, tokenizer, max_answer, reference_answer)
    stats = {"declarations": len(decls), "documented": len(documented),
             "doc_rows_within_token_limits": len(fits), "doc_rejected": len(rejected),
             "doc_rows_in_crate": sum(r["verification"]["scope"] == "crate" for r in fits),
             "rows_with_tests": with_tests, **split.stats(),
             "training_crates": sorted({crate_name(d) for d in decls} - heldout_crates),
             "heldout_crates": sorted(heldout_crates), "doc_in_answer": doc_figures}
    return split, stats


def _unit_hash(text: str) -> float:
    from synth.assemble.mix import unit
    return unit("loop-heldout", text)


def doc_in_answer(decls, tokenizer, cap: int, reference_answer) -> dict:
    """The figures behind leaving the doc comment out of the answer."""
    if not decls:
        return {}
    size = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    kept = [size(reference_answer(d, keep_doc=True)) for d in decls]
    dropped = [size(reference_answer(d)) for d in decls]
    return {"functions": len(decls), "mean_answer_tokens_with_doc": round(sum(kept) / len(kept), 1),
            "mean_answer_tokens_without_doc": round(sum(dropped) / len(dropped), 1),
            "fit_cap_with_doc": round(sum(k <= cap for k in kept) / len(kept), 3),
            "fit_cap_without_doc": round(sum(k <= cap for k in dropped) / len(dropped), 3),
            "doc_with_code_fence": round(sum("```" in d.doc for d in decls) / len(decls), 3), "cap": cap}


def evaluate(sampler, tasks, oracle) -> dict:
    """Greedy answer per task (pass@1 of greedy decoding), judged in one batched call."""
    from training.chat import serve_prompt
    from training.rewards import OracleJudge

    from synth.completion import code_is_final
    # a reply whose first fenced block closed is read the same whatever follows: stop there
    completions = sampler.greedy([serve_prompt(t.prompt) for t in tasks], batch_size=16, until=code_is_final)
    outcomes = OracleJudge({"rust": oracle}).judge(tasks, completions)
    per_task = {t.id: {"compiled": float(o.compiled and o.defined), "passed": float(o.passed),
                       "tests": o.tests} for t, o in zip(tasks, outcomes)}
    failures = Counter(failure(c, o) for c, o in zip(completions, outcomes) if not (o.compiled and o.defined))
    tested = [p["tests"] for p in per_task.values() if p["tests"] is not None]
    n = max(1, len(tasks))
    return {"compile_rate": round(sum(p["compiled"] for p in per_task.values()) / n, 4),
            "pass_at_1": round(sum(p["passed"] for p in per_task.values()) / n, 4),
            "tests_pass_rate": round(sum(t == 1.0 for t in tested) / len(tested), 4) if tested else None,
            "tasks_with_tests": len(tested), "per_task": per_task, "failures": dict(failures.most_common()),
            "samples": {t.id: c for t, c in list(zip(tasks, completions))[:3]}}


def failure(completion: str, outcome) -> str:
    """Why a completion did not count: no code in it, the compiler's first error code (E0599: a
    method that does not exist, E0425: an unknown name, ...), or it compiled but answers nothing."""
    from synth.completion import answer_code
    if not answer_code(completion).strip():
        return "no code"
    return outcome.first_error or "compiles, defines nothing (a placeholder body, a self-call, another name)"


def paired(before: dict, after: dict, seed: int) -> dict:
    from synth.passk import bootstrap_gate
    out = {}
    for key in ("compiled", "passed"):
        gate = bootstrap_gate({t: p[key] for t, p in before["per_task"].items()},
                              {t: p[key] for t, p in after["per_task"].items()}, 2000, 0.95, seed)
        out["compile_rate" if key == "compiled" else "pass_at_1"] = {
            "delta": round(gate.delta, 4), "ci95": [round(gate.low, 4), round(gate.high, 4)]}
    return out


def _profile(model: str, out: Path, data: str, seed: int, **sections):
    from training.profile import parse_profile
    return parse_profile({"model": model, "data": data, "output_dir": str(out), "seed": seed, **sections})


def run_loop_bench(heldout: list[str] | None = None, train: list[str] | None = None, model_dir: str | None = None,
                   out: str = "runs/loop", sft_steps: int = 32, grpo_steps: int = 4, max_prompt: int = 448,
                   max_answer: int = 128, seed: int = 0, rl_share: float = 0.2, lr: float = 6e-4,
                   threads: int | None = None, adapted_layers: int = 12) -> dict:
    from oracles.crate_batch import CrateBatchOracle
    from oracles.rust import RustConfig, RustOracle
    from synth.assemble.tasks import write_tasks
    from oracles.cache import VerdictCache
    from synth.jsonl import write_json, write_jsonl
    from synth.llm.local import LocalSampler
    from training.base_model import DEFAULT_DIR
    from training.grpo import run_grpo
    from training.integrity import InertAdapter
    from training.sft import run_sft

    if threads:  # on a crowded machine one thread beats two that wait for each other at every op
        import torch
        torch.set_num_threads(threads)
    model_dir = str(model_dir or DEFAULT_DIR)
    if not (Path(model_dir) / "config.json").exists():
        raise FileNotFoundError(f"no base model at {model_dir} (run `make model`)")
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str):
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(now - clock, 1)
        clock = now
        progress = {"seconds": seconds, "data": data, **{k: _public(v) for k, v in results.items()}}
        write_json(run / "progress.json", progress)  # a run cut short still shows its phases

    train_paths, heldout_paths, source = default_sources()
    if heldout:
        heldout_paths = [Path(p) for p in heldout]
        train_paths = [p for p in train_paths if p.name not in {h.name for h in heldout_paths}]
    if train:
        train_paths = [Path(p) for p in train]
    run = Path(out)
    results: dict = {}
    data: dict = {}
    cache = VerdictCache(Path("cache") / "verdicts")
    oracle = RustOracle(RustConfig(), cache=cache)
    crate_oracle = CrateBatchOracle(cache=cache)
    tokenizer = _tokenizer(model_dir)
    try:
        split, built = build_data(train_paths, heldout_paths, oracle, tokenizer, max_prompt, max_answer, seed,
                                  rl_share, crate_oracle)
    finally:
        crate_oracle.close()
    data.update(built, tasks=write_tasks(run, split))
    write_jsonl(run / "sft" / "train.jsonl", split.sft_rows)
    lap("data")
    tasks = split.heldout_tasks
    if not tasks or not split.sft_rows:
        raise ValueError(f"no held-out tasks or no training rows: {data}")
    new_tokens = max_answer + 16  # a reference answer fits; rambling stops here
    results["base"] = evaluate(LocalSampler(model_dir, max_new_tokens=new_tokens), tasks, oracle)
    lap("eval_base")
    # adapters on the top layers only: the backward pass stops at the lowest adapted one
    # (the MLP's projections too: on the layers backpropagated through anyway, their adapters cost little)
    common = {"lora": {"r": 16, "alpha": 32, "dropout": 0.0, "layers": top_layers(model_dir, adapted_layers),
                       "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}}
    # a 135M model on a CPU is short of compute, not memory: no recomputed activations (TRL's default)
    optim = {"gradient_checkpointing": False}
    sft_profile = _profile(model_dir, run / "sft_run", str(run / "sft"), seed, **common, sft={
        "learning_rate": lr, "batch_size": 4, "grad_accum": 2, "max_steps": sft_steps, "warmup_ratio": 0.05,
        "max_length": max_prompt + max_answer + 64, "packing": "bucketed", "logging_steps": 5, **optim})
    with contextlib.redirect_stdout(sys.stderr):  # the trainer prints its logs: stdout is the JSON
        sft = run_sft(sft_profile, merge=True)
    lap("sft")
    merged = str(run / "sft_run" / "merged")
    results["sft"] = evaluate(LocalSampler(merged, max_new_tokens=new_tokens), tasks, oracle)
    lap("eval_sft")
    grpo_profile = _profile(merged, run / "grpo_run", "", seed, **common, grpo={
        "tasks": str(run / "tasks" / "rl.jsonl"), "learning_rate": 2e-5, "batch_size": 8, "grad_accum": 1,
        "num_generations": 4, "max_completion_length": new_tokens, "max_steps": grpo_steps, "temperature": 0.8,
        "logging_steps": 1, "reward_weights": {"compile": 1.0, "tests": 1.0, "format": 0.0}, **optim})
    grpo_note = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            grpo = run_grpo(grpo_profile, oracles={"rust": oracle})
        lap("grpo")
        results["grpo"] = evaluate(LocalSampler(merged, adapter=str(run / "grpo_run" / "adapter"),
                                                max_new_tokens=new_tokens), tasks, oracle)
    except InertAdapter as exc:  # every group had equal rewards: nothing to learn from
        grpo, grpo_note = {}, f"GRPO adapter stayed inert ({exc}); evaluated as the SFT model"
        lap("grpo")
        results["grpo"] = results["sft"]
    lap("eval_grpo")
    summary = {name: _public(r) for name, r in results.items()}
    return {"source": source, "heldout_tasks": len(tasks), "train_rows": len(split.sft_rows),
            "rl_tasks": len(split.rl_tasks), "data": data, "seconds": {**seconds, "total": round(sum(seconds.values()), 1)},
            **summary, "sft_vs_base": paired(results["base"], results["sft"], seed),
            "grpo_vs_sft": paired(results["sft"], results["grpo"], seed), "grpo_note": grpo_note,
            "sft_train": _train_summary(sft), "grpo_train": _train_summary(grpo),
            "settings": {"sft_steps": sft_steps, "grpo_steps": grpo_steps, "max_prompt": max_prompt,
                         "max_answer": max_answer, "max_new_tokens": new_tokens, "lr": lr, "seed": seed,
                         "adapted_layers": common["lora"]["layers"],
                         "decoding": "greedy"}}


def top_layers(model_dir: str, n: int) -> list[int]:
    """The indices of the model's top `n` decoder layers (all of them for n <= 0)."""
    import json
    total = json.loads((Path(model_dir) / "config.json").read_text())["num_hidden_layers"]
    return list(range(max(0, total - n), total)) if n > 0 else []


def _public(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "per_task"}


def _tokenizer(model_dir: str):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


def _train_summary(manifest: dict) -> dict:
    logs = manifest.get("log_history", []) if manifest else []
    keep = ("loss", "reward", "rewards/compile/mean", "rewards/compile", "learning_rate", "step")
    return {"steps": manifest.get("global_step") if manifest else 0,
            "log": [{k: round(v, 4) if isinstance(v, float) else v for k, v in log.items() if k in keep}
                    for log in logs if any(k in log for k in keep[:4])]}


def bench(args) -> dict:
    """`synth bench loop`."""
    return run_loop_bench(heldout=args.heldout, seed=args.seed, sft_steps=args.steps or 32, threads=args.jobs)
