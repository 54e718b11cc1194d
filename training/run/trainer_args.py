"""Trainer and LoRA arguments built as plain data from the profile, then checked against the
installed library: a name the installed `trl`/`transformers`/`peft` does not accept is an error,
never a silently ignored setting (the audit's trainer ignored half of its profile)."""
from __future__ import annotations

import dataclasses
import inspect

from oracles.errors import InputError
from training.run.profile import GrpoSettings, OptimSettings, Profile, SftSettings
from training.rewards import COMPONENTS


class UnknownTrainerArgument(InputError, TypeError):
    pass


def accepted_names(cls) -> set[str]:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls) if f.init}
    return set(inspect.signature(cls).parameters)


def build(cls, kwargs: dict):
    """`cls(**kwargs)` after checking every name against what the installed class accepts."""
    unknown = sorted(set(kwargs) - accepted_names(cls))
    if unknown:
        raise UnknownTrainerArgument(f"{cls.__module__}.{cls.__name__} (installed) does not accept {unknown}; "
                                     "the setting would be lost")
    return cls(**kwargs)


def _optim_kwargs(profile: Profile, section: OptimSettings, output_dir: str) -> dict:
    return {
        "output_dir": output_dir,
        "seed": profile.seed,
        "data_seed": profile.seed,
        "learning_rate": section.learning_rate,
        "lr_scheduler_type": section.lr_scheduler,
        "warmup_steps": section.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        "weight_decay": section.weight_decay,
        "max_grad_norm": section.max_grad_norm,
        "optim": section.optimizer,
        "per_device_train_batch_size": section.batch_size,
        "gradient_accumulation_steps": section.grad_accum,
        "num_train_epochs": section.epochs,
        "max_steps": section.max_steps,
        # A run shorter than the logging interval would log no loss at all: log at least 5 times.
        "logging_steps": min(section.logging_steps, max(1, section.max_steps // 5)) if section.max_steps > 0
        else section.logging_steps,
        "save_strategy": "steps" if section.save_steps else "no",
        **({"save_steps": section.save_steps} if section.save_steps else {}),
        "bf16": section.bf16,
        "gradient_checkpointing": section.gradient_checkpointing,
        "report_to": [],
        "disable_tqdm": True,
        # Without an accelerator, say so: then `torchrun` on CPU runs real multi-process DDP (gloo).
        "use_cpu": not _accelerator_available(),
    }


def _accelerator_available() -> bool:
    import torch
    return torch.accelerator.is_available()


def sft_kwargs(profile: Profile, output_dir: str) -> dict:
    sft: SftSettings = profile.sft
    return {
        **_optim_kwargs(profile, sft, output_dir),
        # Rows arrive tokenized, truncated (answer kept) and weighted (training/data/dataset.py) and are
        # batched by our collator: TRL must not re-tokenize, truncate, pack or drop the weight column.
        "max_length": None,
        "dataset_kwargs": {"skip_prepare_dataset": True},
        "remove_unused_columns": False,
        "prediction_loss_only": True,
    }


def batching(profile: Profile) -> dict:
    """The settings our encoder and collator apply (TRL's own are switched off above)."""
    return {"max_length": profile.sft.max_length, "padding_free": profile.sft.packing == "padding_free",
            "bucketed": profile.sft.packing == "bucketed"}


def reward_weights(grpo: GrpoSettings) -> list[float]:
    """The weight of every registered reward component, in the order TRL gets their functions:
    as declared (training/rewards.py), or as the profile overrides it."""
    unknown = sorted(set(grpo.reward_weights) - set(COMPONENTS))
    if unknown:
        raise UnknownTrainerArgument(f"grpo.reward_weights names {unknown}; the reward components are "
                                     f"{list(COMPONENTS)}")
    return [grpo.reward_weights.get(name, component.weight) for name, component in COMPONENTS.items()]


def grpo_kwargs(profile: Profile, output_dir: str) -> dict:
    grpo: GrpoSettings = profile.grpo
    return {
        **_optim_kwargs(profile, grpo, output_dir),
        "num_generations": grpo.num_generations,
        "max_completion_length": grpo.max_completion_length,
        "temperature": grpo.temperature,
        "top_p": grpo.top_p,
        "beta": grpo.beta,
        "reward_weights": reward_weights(grpo),
        # a static KV cache while sampling: the default one grows by concatenation (1.5x slower on a CPU)
        "cache_implementation": "static",
        "remove_unused_columns": False,
        "shuffle_dataset": True,
    }


def lora_kwargs(profile: Profile) -> dict:
    return {"r": profile.lora.r, "lora_alpha": profile.lora.alpha, "lora_dropout": profile.lora.dropout,
            "target_modules": list(profile.lora.target_modules), "task_type": "CAUSAL_LM",
            **({"layers_to_transform": list(profile.lora.layers)} if profile.lora.layers else {})}


def resolved(args, lora_config, batch: dict | None = None) -> dict:
    """What the trainer actually got, for the run manifest (and T9)."""
    config = args.to_dict()
    lora = lora_config.to_dict() if hasattr(lora_config, "to_dict") else dict(vars(lora_config))
    lora["target_modules"] = sorted(lora["target_modules"]) if lora.get("target_modules") else lora.get(
        "target_modules")
    return {"trainer": config, "lora": {k: v for k, v in lora.items() if _plain(v)}, "batching": batch or {}}


def _plain(value) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))
