"""The training profile (TOML): every field the user sets, validated, with unknown keys rejected.
The audit's trainer ignored half its profile; here each field maps to a trainer or LoRA argument
(`training/run/trainer_args.py`) and a test changes each one and watches the resolved config move."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from oracles.errors import InputError
from oracles.settings import OracleSettings
from synth.llm.models import ModelSettings
from synth.settings.strict import Strict as _Strict
from synth.settings.strict import explain


class LoraSettings(_Strict):
    r: int = Field(16, gt=0)
    alpha: int = Field(32, gt=0)
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    # which decoder layers get adapters (empty: all). Only the top ones: the backward pass stops at
    # the lowest adapted layer, so a step on a CPU costs less (the loop bench adapts the top 12 of 30)
    layers: list[int] = Field(default_factory=list)


class OptimSettings(_Strict):
    """Shared by SFT and GRPO."""
    learning_rate: float = Field(2e-4, gt=0)
    lr_scheduler: str = "cosine"
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    optimizer: str = "adamw_torch"
    batch_size: int = Field(4, gt=0)  # rows per device per micro-batch
    grad_accum: int = Field(8, gt=0)
    epochs: float = Field(1.0, gt=0)
    max_steps: int = -1  # > 0 overrides epochs
    logging_steps: int = Field(10, gt=0)
    save_steps: int = Field(0, ge=0)  # 0: save at the end only
    bf16: bool = False
    # recompute activations in the backward pass: saves memory, costs compute (TRL's default: on);
    # a small model on a CPU is short of compute, not memory
    gradient_checkpointing: bool = True


class SftSettings(OptimSettings):
    max_length: int = Field(2048, gt=16)
    # padding_free: rows of a micro-batch end to end, no pad at all (fastest with varlen attention
    # kernels, e.g. flash-attention on GPU); bucketed: padded batches of rows of similar length
    # (best with plain SDPA, e.g. on CPU); padded: pad to the longest row of a random batch.
    packing: Literal["padding_free", "bucketed", "padded"] = "padding_free"


class GrpoSettings(OptimSettings):
    learning_rate: float = Field(1e-5, gt=0)
    tasks: str = ""  # tasks JSONL: id, lang, prompt, and optionally context, tests, must_define
    num_generations: int = Field(8, gt=1)
    max_completion_length: int = Field(256, gt=0)
    temperature: float = Field(0.8, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    beta: float = Field(0.0, ge=0)
    # > 0: train only on tasks the starting policy solves sometimes, estimated from this many samples
    # each (a group whose rewards are all equal teaches GRPO nothing)
    probe_samples: int = Field(0, ge=0)
    probe_tasks: int = Field(0, ge=0)  # > 0: probe (and train on) a seeded sample of this many tasks only
    # Overrides of the reward components' declared weights (training/rewards.py), by name.
    reward_weights: dict[str, float] = Field(default_factory=dict)
    # the reward's `tests` (and the probe) also run an answer that counts against its crate's own
    # tests, as `[eval] crate_tests` does: seconds a run, kept in `[eval] verdicts`
    crate_tests: bool = False


class EvalSettings(_Strict):
    tasks: str = ""
    # greedy: one deterministic answer per task (pass@1 of greedy decoding); sample: `samples` per
    # task at `temperature`, pass@1 and pass@k with the unbiased estimator
    decoding: Literal["greedy", "sample"] = "sample"
    k: int = Field(5, gt=0)  # pass@k is reported for 1 and k
    samples: int = Field(10, gt=0)  # n samples per task (n >= k)
    temperature: float = Field(0.8, gt=0)
    top_p: float = Field(0.95, gt=0, le=1)
    max_new_tokens: int = Field(256, gt=0)
    batch_size: int = Field(16, gt=0)  # prompts generated together (left-padded)
    dtype: Literal["float32", "bfloat16"] = ModelSettings.model_fields["dtype"].default  # the weights while generating
    shots: int = Field(0, ge=0)  # worked examples (from `examples`) shown before each task, per family
    examples: str = ""  # a tasks file whose tasks (with their reference answers) are the worked examples
    # answers in all per sample: one the compiler rejects goes back with its errors for another (compile feedback)
    turns: int = Field(1, gt=0)
    # all: every sample is an answer (pass@1 over samples, pass@k); compiled: one answer a task, the
    # first sample the compiler accepts that a user can see is real (training/evaluation/evaluate.py: pick_compiled)
    pick: Literal["all", "compiled"] = "all"
    # sampled evaluations: the samples drawn this many times, each draw with a seed of its own
    # (training/evaluation/draws.py); one draw of 8 samples moves a picked rate by points,
    # so a bar is judged on the mean of draws decided before any is seen
    draws: int = Field(1, gt=0)
    # a greedy reply that gives back the broken code it was shown (a repair prompt's, a later
    # turn's) is sampled again, up to this many replies, and the first that changes the code is the
    # answer (training/evaluation/model_answers.py): asked the same way again, a model gives the same copy
    retries: int = Field(0, ge=0)
    # an answer that counts also runs its crate's own tests (`cargo test`, unit and integration) where
    # they all pass on the original and the task says where it sits in its crate (repair tasks, and
    # codegen tasks of functions checked standalone): pass@1 then needs them (the compiler cannot
    # tell a value from the one meant); compile_rate is unchanged
    crate_tests: bool = False
    # a folder of stored verdicts for those test runs (relative to the profile): an answer tested once
    # is not run again by a later evaluation ('' : none kept)
    verdicts: str = ""
    bootstrap: int = Field(2000, gt=99)
    confidence: float = Field(0.95, gt=0.5, lt=1)


class Profile(_Strict):
    model: str  # a local model directory (weights + tokenizer); nothing is downloaded
    data: str = ""  # a snapshot directory (train.jsonl.zst, val.jsonl.zst) from `synth assemble`
    output_dir: str = "runs/train"
    seed: int = 0
    # how the model answers a repair prompt, in training and evaluation alike: the whole corrected
    # declaration, or only the lines that change as SEARCH/REPLACE blocks (synth/tasks/edits.py)
    repair_answers: Literal["declaration", "edit"] = "declaration"
    lora: LoraSettings = Field(default_factory=LoraSettings)
    sft: SftSettings = Field(default_factory=SftSettings)
    grpo: GrpoSettings = Field(default_factory=GrpoSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    oracle: OracleSettings = Field(default_factory=OracleSettings)

    @property
    def edits(self) -> bool:
        """Repair prompts ask for, and repair answers are read as, SEARCH/REPLACE edits."""
        return self.repair_answers == "edit"


class ProfileError(InputError):
    pass


def load_profile(path: str | Path, overrides: dict | None = None) -> Profile:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: {exc}") from exc
    data = data.get("train", data)  # a [train] table of synth.toml, or a profile file of its own
    for key, value in (overrides or {}).items():
        data[key] = value
    base = path.parent
    for key in ("model", "data", "output_dir"):
        if isinstance(data.get(key), str) and data[key] and not Path(data[key]).is_absolute():
            data[key] = str(base / data[key])
    for section, key in (("grpo", "tasks"), ("eval", "tasks"), ("eval", "examples"), ("eval", "verdicts")):
        tasks = data.get(section, {}).get(key)
        if tasks and not Path(tasks).is_absolute():
            data[section][key] = str(base / tasks)
    return parse_profile(data, str(path))


def parse_profile(data: dict, where: str = "profile") -> Profile:
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(f"{where}: {explain(Profile, exc)}") from exc
