"""`synth train grpo`: TRL's GRPOTrainer with LoRA, rewarded by the compiler (rewards.py).
Prompts are rendered with the serving template, so the policy is trained on exactly what it
will be served. Same integrity checks as SFT: manifest, resume guard, live adapter."""
from __future__ import annotations

import time
from pathlib import Path

from trl import GRPOConfig, GRPOTrainer

from .chat import serve_prompt
from .dataset import fingerprint
from .integrity import lora_snapshot, require_live_adapter
from .manifest import RunRecorder, check_resume, git_state, library_versions, step_time_stats, write_manifest
from .profile import Profile
from .rewards import CompilerRewards, OracleJudge, load_tasks, oracles_for
from .sft import load_model
from .trainer_args import build, grpo_kwargs, lora_kwargs, resolved


def task_dataset(tasks):
    from datasets import Dataset
    return Dataset.from_list([{"prompt": serve_prompt(t.prompt), "task_id": t.id} for t in tasks])


def run_grpo(profile: Profile, resume: bool = False, oracles: dict | None = None) -> dict:
    from peft import LoraConfig

    launched = {"git": git_state(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = Path(profile.output_dir)
    tasks_path = profile.grpo.tasks or (str(Path(profile.data) / "tasks.jsonl") if profile.data else "")
    tasks = load_tasks(tasks_path)
    data_fingerprint = fingerprint([Path(tasks_path)])
    checkpoint = str(check_resume(out, data_fingerprint)) if resume else None
    judge = OracleJudge(oracles if oracles is not None else oracles_for(profile.oracle, {t.lang for t in tasks}))
    rewards = CompilerRewards(judge, {t.id: t for t in tasks})
    args = build(GRPOConfig, grpo_kwargs(profile, str(out), list(rewards.names)))
    lora = build(LoraConfig, lora_kwargs(profile))
    model, tokenizer = load_model(profile.model)
    recorder = RunRecorder(data_fingerprint)
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.functions(), args=args,
                          train_dataset=task_dataset(tasks), processing_class=tokenizer, peft_config=lora,
                          callbacks=[recorder])
    initial = lora_snapshot(trainer.model)
    manifest = {"kind": "grpo", **launched, "data": {"tasks": tasks_path, "fingerprint": data_fingerprint,
                                                     "n_tasks": len(tasks)},
                "model": profile.model, "profile": profile.model_dump(), "resolved": resolved(trainer.args, lora),
                "versions": library_versions(), "resumed_from": checkpoint, "status": "running"}
    main = trainer.is_world_process_zero()  # under `accelerate launch`, one writer
    manifest["world_size"] = trainer.accelerator.num_processes
    if main:
        write_manifest(out, manifest)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    probe = tokenizer(serve_prompt(tasks[0].prompt), return_tensors="pt")["input_ids"].to(trainer.model.device)
    adapter = require_live_adapter(trainer.model, initial, probe)
    trainer.save_model(str(out / "adapter"))  # saves on the main process only
    if main:
        tokenizer.save_pretrained(str(out / "adapter"))
    rewards_logged = {k: [log[k] for log in recorder.logs if k in log]
                      for k in sorted({k for log in recorder.logs for k in log if k.startswith("rewards/")})}
    manifest.update(status="done", train_metrics=result.metrics, step_times=step_time_stats(recorder.durations),
                    step_durations=[round(d, 6) for d in recorder.durations],
                    log_history=recorder.logs, reward_components=rewards_logged, adapter_check=adapter.__dict__,
                    oracle={"generation_batches": judge.batches, "check_calls": judge.calls,
                            "completions_checked": judge.checked, "completions_tested": judge.tested},
                    global_step=trainer.state.global_step)
    if main:
        write_manifest(out, manifest)
    manifest["is_main_process"] = main
    return manifest
