"""`synth bench train`: padded vs length-bucketed vs padding-free batches on a tiny Llama, side by
side in one run.

Rows are the example crate's declarations (doc comment as the request, code as the answer), so
lengths vary as in real data. Both sides see the same rows in the same order, run the same
number of optimizer steps with the same loss, and alternate (medians over repeats). Reported:
the padding fraction (positions computed that hold no token), real tokens per second, and
whether the two modes give the same loss on the same batch (the packed attention must keep rows
apart for that to hold)."""
from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODES = ("padded", "bucketed", "padding_free")


def bench_rows() -> list[list[dict]]:
    from synth.extract import extract_paths
    decls = extract_paths([REPO / "examples" / "rust"]).declarations
    return [[{"role": "user", "content": d.doc or f"Write `{d.name}`."},
             {"role": "assistant", "content": d.clean_text}] for d in decls]


def _run(model, examples, batch_size: int, steps: int, padding_free: bool, pad_id: int, lr: float = 1e-3):
    import torch

    from training.data.collate import WeightedCollator
    from training.loss import supervised_tokens, weighted_token_loss

    collate = WeightedCollator(pad_id, padding_free=padding_free)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    start = time.perf_counter()
    for step in range(steps):
        chunk = [examples[(step * batch_size + i) % len(examples)] for i in range(batch_size)]
        batch = collate(chunk)
        inputs = {k: v for k, v in batch.items() if k not in ("labels", "token_weights")}
        logits = model(**inputs, use_cache=False).logits  # with a cache, packed rows would attend to each other
        loss = weighted_token_loss(logits, batch["labels"], batch["token_weights"],
                                   supervised_tokens(batch["labels"]))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return time.perf_counter() - start, collate.tokens, collate.positions  # counted by the collator


def first_batch_losses(model, examples, batch_size: int, pad_id: int) -> tuple[float, float]:
    import torch

    from training.data.collate import WeightedCollator
    from training.loss import supervised_tokens, weighted_token_loss
    out = []
    with torch.no_grad():
        for padding_free in (False, True):
            batch = WeightedCollator(pad_id, padding_free=padding_free)(examples[:batch_size])
            inputs = {k: v for k, v in batch.items() if k not in ("labels", "token_weights")}
            out.append(float(weighted_token_loss(model(**inputs, use_cache=False).logits, batch["labels"], batch["token_weights"],
                                                 supervised_tokens(batch["labels"]))))
    return out[0], out[1]


def run_train_bench(steps: int = 12, repeats: int = 3, batch_size: int = 8, seed: int = 0,
                    max_length: int = 512) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.fixtures.tiny_model import build_tiny_model
    from synth.prompting.templates import system_prompt
    from training.data.curriculum import CurriculumSampler
    from training.data.encode import encode

    torch.set_num_threads(max(1, torch.get_num_threads()))
    conversations = bench_rows()
    texts = [system_prompt()] + [c[0]["content"] + c[1]["content"] for c in conversations]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_model(Path(tmp) / "model", texts, hidden=64, seed=seed)
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        examples = [{"input_ids": e.input_ids, "labels": e.labels, "weight": 1.0}
                    for e in (encode(c, tokenizer, max_length) for c in conversations)]
        random.Random(seed).shuffle(examples)
        sampler = CurriculumSampler([5] * len(examples), seed, [len(e["input_ids"]) for e in examples], batch_size)
        orders = {"padded": examples, "bucketed": [examples[i] for i in sampler], "padding_free": examples}
        times = {mode: [] for mode in MODES}
        counts = {}
        for _ in range(repeats):
            for mode in MODES:  # alternate, so drift in machine load hits every mode alike
                torch.manual_seed(seed)
                model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
                elapsed, real, computed = _run(model, orders[mode], batch_size, steps, mode == "padding_free",
                                               tokenizer.pad_token_id)
                times[mode].append(elapsed)
                counts[mode] = (real, computed)
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
        padded_loss, free_loss = first_batch_losses(model, examples, batch_size, tokenizer.pad_token_id)
    result = {"rows": len(examples), "batch_size": batch_size, "steps": steps, "repeats": repeats}
    for mode in MODES:
        real, computed = counts[mode]
        median = statistics.median(times[mode])
        result[mode] = {"padding_fraction": round(1 - real / computed, 4),
                        "tokens_per_s": round(real / median, 1), "median_s": round(median, 4)}
    for mode in ("bucketed", "padding_free"):
        result[mode]["speedup_vs_padded"] = round(result[mode]["tokens_per_s"] / result["padded"]["tokens_per_s"], 3)
    result["same_loss"] = abs(padded_loss - free_loss) <= 1e-5 * max(1.0, abs(padded_loss))
    result["losses"] = [round(padded_loss, 6), round(free_loss, 6)]
    result["identical"] = result["same_loss"]
    return result


def bench(args) -> dict:
    """`synth bench train`."""
    return run_train_bench(steps=args.steps or 12, repeats=args.repeats, seed=args.seed)
