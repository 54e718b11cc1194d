"""`synth train grpo`: TRL's GRPOTrainer with LoRA, rewarded by the compiler (rewards.py).
Prompts are rendered with the serving template, so the policy is trained on exactly what it
will be served. Same integrity checks as SFT: manifest, resume guard, live adapter."""
from __future__ import annotations

from pathlib import Path

from trl import GRPOConfig, GRPOTrainer

from oracles.factory import build_oracles

from .chat import serve_prompt
from .dataset import fingerprint
from .lifecycle import RunLifecycle
from .manifest import RunRecorder, check_resume
from .profile import Profile
from synth.task import load_tasks

from .rewards import CompilerRewards, OracleJudge
from .sft import load_model
from .trainer_args import build, grpo_kwargs, lora_kwargs, resolved


def task_dataset(tasks):
    from datasets import Dataset
    return Dataset.from_list([{"prompt": serve_prompt(t.prompt), "task_id": t.id} for t in tasks])


def grpo_trainer(profile: Profile, output_dir: str, rewards: CompilerRewards, tasks, callbacks: list | None = None):
    """TRL's trainer on the profile's model, with a function and a resolved weight for every
    registered reward component; and the LoRA config and tokenizer it got. Settings are checked
    before the model is loaded."""
    from peft import LoraConfig

    args = build(GRPOConfig, grpo_kwargs(profile, output_dir))
    lora = build(LoraConfig, lora_kwargs(profile))
    model, tokenizer = load_model(profile.model)
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.functions(), args=args, train_dataset=task_dataset(tasks),
                          processing_class=tokenizer, peft_config=lora, callbacks=callbacks or [])
    return trainer, lora, tokenizer


def run_grpo(profile: Profile, resume: bool = False, oracles: dict | None = None) -> dict:
    run = RunLifecycle("grpo", profile)
    tasks_path = profile.grpo.tasks or (str(Path(profile.data) / "tasks.jsonl") if profile.data else "")
    tasks = load_tasks(tasks_path)
    data_fingerprint = fingerprint([Path(tasks_path)])
    checkpoint = str(check_resume(run.out, data_fingerprint)) if resume else None
    judge = OracleJudge(oracles if oracles is not None else build_oracles({t.lang for t in tasks}, profile.oracle))
    rewards = CompilerRewards(judge, {t.id: t for t in tasks})
    recorder = RunRecorder(data_fingerprint)
    trainer, lora, tokenizer = grpo_trainer(profile, str(run.out), rewards, tasks, [recorder])
    run.begin(trainer, {"tasks": tasks_path, "fingerprint": data_fingerprint, "n_tasks": len(tasks)},
              resolved(trainer.args, lora), checkpoint)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    probe = tokenizer(serve_prompt(tasks[0].prompt), return_tensors="pt")["input_ids"].to(trainer.model.device)
    rewards_logged = {k: [log[k] for log in recorder.logs if k in log]
                      for k in sorted({k for log in recorder.logs for k in log if k.startswith("rewards/")})}
    return run.end(result, recorder, probe, tokenizer, reward_components=rewards_logged,
                   oracle={"generation_batches": judge.batches, "check_calls": judge.calls,
                           "completions_checked": judge.checked, "completions_tested": judge.tested})
