"""T9: every profile field reaches the trainer. Each field of the LoRA, SFT and GRPO sections (and
the seed) is changed in turn and the resolved trainer config must change; the list of fields
comes from the profile model itself, so a field added without wiring fails here. Plus: unknown
profile keys are rejected with a suggestion, and trainer arguments the installed library does
not accept are an error, not a silent drop."""
import pytest
from peft import LoraConfig
from trl import GRPOConfig, SFTConfig

from training.run.profile import GrpoSettings, LoraSettings, ProfileError, SftSettings, parse_profile
from training.rewards import COMPONENTS
from training.run.trainer_args import (UnknownTrainerArgument, batching, build, grpo_kwargs, lora_kwargs, resolved,
                                   sft_kwargs)

BASE = {"model": "m", "output_dir": "/tmp/out"}


def _changed(value):
    """A different valid value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2 if value > 0 else 8  # doubling keeps batch/generation divisibility
    if isinstance(value, float):
        return round(value * 0.5 + 0.01, 6)
    if isinstance(value, str):
        return {"cosine": "linear", "adamw_torch": "sgd", "padding_free": "padded"}.get(value, value + "_x")
    if isinstance(value, list):
        return value[:1] + ["gate_proj"]
    if isinstance(value, dict):  # reward weights: overrides of the declared ones
        return {name: component.weight + 1 for name, component in COMPONENTS.items()}
    raise AssertionError(f"no variation for {value!r}")


def _resolve(data: dict, stage: str) -> dict:
    profile = parse_profile(data)
    lora = build(LoraConfig, lora_kwargs(profile))
    if stage == "sft":
        return resolved(build(SFTConfig, sft_kwargs(profile, profile.output_dir)), lora, batching(profile))
    return resolved(build(GRPOConfig, grpo_kwargs(profile, profile.output_dir)), lora)


def _variants():
    for section, model, stage in (("lora", LoraSettings, "sft"), ("sft", SftSettings, "sft"), ("grpo", GrpoSettings, "grpo")):
        for name, field in model.model_fields.items():
            if section == "grpo" and name in ("tasks", "probe_samples", "probe_tasks", "crate_tests"):
                continue  # which tasks GRPO trains on and how its judge runs, not trainer settings (test_training_runs
                # probes them; tests/tasks/test_crate_tests.py the reward with the crate's tests)
            yield section, name, field, stage
    yield None, "seed", None, "sft"
    yield None, "seed", None, "grpo"


@pytest.mark.parametrize("section,name,field,stage", list(_variants()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_t9_each_profile_field_changes_the_resolved_trainer_config(section, name, field, stage):
    base = parse_profile(BASE).model_dump()
    changed = parse_profile(BASE).model_dump()
    if section is None:
        changed[name] = _changed(base[name])
    elif field.annotation == list[int]:  # layer indices (empty: all layers)
        changed[section][name] = [0]
    else:
        changed[section][name] = _changed(base[section][name])
    if name == "bf16":  # transformers refuses bf16 without an accelerator: compare the kwargs it would get
        make = sft_kwargs if stage == "sft" else grpo_kwargs
        before, after = (make(parse_profile(d), "/tmp/out") for d in (base, changed))
    else:
        before, after = _resolve(base, stage), _resolve(changed, stage)
    assert before != after, f"{section}.{name} does not reach the {stage} trainer"


def test_unknown_profile_keys_are_rejected_with_a_suggestion():
    with pytest.raises(ProfileError, match=r"unknown key 'sft.learning_rat' \(did you mean 'learning_rate'\?\)"):
        parse_profile({**BASE, "sft": {"learning_rat": 1e-4}})
    with pytest.raises(ProfileError, match="unknown key 'lora_rank'"):
        parse_profile({**BASE, "lora_rank": 8})
    with pytest.raises(ProfileError, match="sft.batch_size"):
        parse_profile({**BASE, "sft": {"batch_size": 0}})


def test_a_trainer_argument_the_installed_library_drops_is_an_error():
    # transformers 5 removed `warmup_ratio` (a float warmup_steps is the ratio): passing it blindly
    # would be an error at best and a silently ignored setting at worst.
    with pytest.raises(UnknownTrainerArgument, match=r"does not accept \['warmup_ratio'\]"):
        build(SFTConfig, {"output_dir": "/tmp/x", "warmup_ratio": 0.1})
    profile = parse_profile({**BASE, "grpo": {"reward_weights": {"compile": 1.0, "style": 0.5}}})
    with pytest.raises(UnknownTrainerArgument, match="style"):
        grpo_kwargs(profile, "/tmp/x")


def test_warmup_ratio_becomes_a_warmup_fraction_of_the_schedule():
    args = build(SFTConfig, sft_kwargs(parse_profile({**BASE, "sft": {"warmup_ratio": 0.25, "max_steps": 8}}),
                                       "/tmp/x"))
    assert args.get_warmup_steps(8) == 2


def test_the_example_profile_and_accelerate_config_load():
    from pathlib import Path

    from accelerate.commands.config.config_args import load_config_from_file

    from training.run.profile import load_profile
    root = Path(__file__).resolve().parents[2] / "examples" / "train"
    profile = load_profile(root / "profile.toml")
    assert profile.sft.packing == "padding_free" and profile.grpo.reward_weights["compile"] == 1.0
    assert Path(profile.model).is_absolute()  # relative paths resolve against the profile's folder
    config = load_config_from_file(str(root / "accelerate_multi_gpu.yaml"))
    assert config.num_processes == 8 and str(config.distributed_type).endswith("MULTI_GPU")


@pytest.mark.slow
def test_the_training_package_imports_no_synthesis_lane():
    """Training sits beside synthesis, not on it: shared pieces (pass@k, reading a reply, JSONL,
    prompts) live below both. Checked in a fresh interpreter, over every training module."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import importlib, pkgutil, sys, training\n"
            "for m in pkgutil.iter_modules(training.__path__): importlib.import_module('training.' + m.name)\n"
            "lanes = ('synth.generation', 'synth.mutate', 'synth.tools', 'synth.pipeline', 'synth.extract', 'synth.lanes')\n"
            "print(sorted(m for m in sys.modules if m.startswith(lanes)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"
