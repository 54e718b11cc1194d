"""`synth train grpo`: TRL's GRPOTrainer with LoRA, rewarded by the compiler (rewards.py).
Prompts are rendered with the serving template, so the policy is trained on exactly what it
will be served. Same integrity checks as SFT: manifest, resume guard, live adapter.

GRPO learns only from groups whose rewards differ: a task the policy always or never solves gives
every completion the same advantage, and nothing moves. With `probe_samples`, each task's success
is first estimated from that many samples of the starting policy, and only tasks it sometimes
solves (0 < p < 1) are trained on; the manifest says how many of each there were, and TRL logs
`frac_reward_zero_std` (the share of groups with equal rewards) at every step."""
from __future__ import annotations

import random
from pathlib import Path

from trl import GRPOConfig, GRPOTrainer

from oracles.errors import InputError
from oracles.factory import build_oracle, build_oracles, crate_tests_oracle
from synth.tasks.completion import code_is_final
from synth.tasks.edits import answer_for, prompt_for
from synth.tasks.judge import Judge
from synth.tasks.task import load_tasks

from synth.prompting.chat import serve_prompt
from training.data.dataset import fingerprint
from training.run.lifecycle import RunLifecycle
from training.run.manifest import RunRecorder, check_resume
from training.run.profile import Profile
from training.rewards import CompilerRewards
from training.sft import load_model
from training.run.trainer_args import build, grpo_kwargs, lora_kwargs, resolved


def task_dataset(tasks, edits: bool = False):
    from datasets import Dataset
    return Dataset.from_list([{"prompt": serve_prompt(prompt_for(t, edits)), "task_id": t.id} for t in tasks])


def score_completions_only_on_cpu() -> None:
    """TRL's fused LM head projects every position of a sequence onto the vocabulary on devices
    without Triton, to keep tile shapes fixed for compilers that would otherwise recompile (e.g.
    Neuron); its compact path projects only the positions that carry a label (the completion).
    A CPU compiles nothing: take the compact path there (the prompt is most of a GRPO sequence)."""
    import trl.trainer.utils as trl_utils
    if getattr(trl_utils._use_triton, "synth_compact_on_cpu", False):
        return
    original = trl_utils._use_triton

    def use_compact(device):
        return device.type == "cpu" or original(device)
    use_compact.synth_compact_on_cpu = True
    trl_utils._use_triton = use_compact


def grpo_trainer(profile: Profile, output_dir: str, rewards: CompilerRewards, tasks, callbacks: list | None = None):
    """TRL's trainer on the profile's model, with a function and a resolved weight for every
    registered reward component; and the LoRA config and tokenizer it got. Settings are checked
    before the model is loaded."""
    from peft import LoraConfig

    score_completions_only_on_cpu()
    args = build(GRPOConfig, grpo_kwargs(profile, output_dir))
    lora = build(LoraConfig, lora_kwargs(profile))
    model, tokenizer = load_model(profile.model)
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.functions(), args=args, train_dataset=task_dataset(tasks, profile.edits),
                          processing_class=tokenizer, peft_config=lora, callbacks=callbacks or [])
    return trainer, lora, tokenizer


def run_grpo(profile: Profile, resume: bool = False, oracles: dict | None = None, crate_oracle=None) -> dict:
    run = RunLifecycle("grpo", profile)
    tasks_path = profile.grpo.tasks or (str(Path(profile.data) / "tasks.jsonl") if profile.data else "")
    tasks = load_tasks(tasks_path)
    refuse_heldout_mistakes(tasks, tasks_path)
    data_fingerprint = fingerprint([Path(tasks_path)])
    checkpoint = str(check_resume(run.out, data_fingerprint)) if resume else None
    own_crate_oracle = crate_oracle is None and any(t.in_crate for t in tasks)
    if own_crate_oracle:
        crate_oracle = build_oracle("cargo-crate", profile.oracle)
    try:
        judge = grpo_judge(profile, tasks, oracles, crate_oracle)
        return _train(profile, run, tasks, tasks_path, data_fingerprint, checkpoint, judge)
    finally:
        if own_crate_oracle:
            crate_oracle.close()


def grpo_judge(profile: Profile, tasks: list, oracles: dict | None = None, crate_oracle=None) -> Judge:
    """The judge behind the reward and the probe: eval's, with the crates' own tests where
    `[grpo] crate_tests` (a wrong value that compiles then earns no `tests` reward), their runs kept
    in `[eval] verdicts`."""
    return Judge(oracles if oracles is not None else build_oracles({t.lang for t in tasks}, profile.oracle),
                 crate_oracle, crate_tests=crate_tests_oracle(profile.oracle, profile.eval.verdicts)
                 if profile.grpo.crate_tests else None)


def refuse_heldout_mistakes(tasks: list, tasks_path: str) -> None:
    """Self-repair tasks are the held-out crates' answers (synth/tasks/selfrepair.py): evaluation only."""
    mine = [t.id for t in tasks if t.family == "selfrepair"]
    if mine:
        raise InputError(f"{tasks_path}: {len(mine)} selfrepair tasks (e.g. {mine[0]!r}) are models' answers to "
                         "held-out tasks, for evaluation only; GRPO trains on RL tasks (RUN/tasks/rl.jsonl)")


def _train(profile: Profile, run: RunLifecycle, tasks: list, tasks_path: str, data_fingerprint: str,
           checkpoint: str | None, judge: Judge) -> dict:
    probe = None
    if profile.grpo.probe_samples:
        tasks, probe = learnable_tasks(profile, tasks, judge)
    rewards = CompilerRewards(judge, {t.id: t for t in tasks}, edits=profile.edits)
    recorder = RunRecorder(data_fingerprint)
    trainer, lora, tokenizer = grpo_trainer(profile, str(run.out), rewards, tasks, [recorder])
    run.begin(trainer, {"tasks": tasks_path, "fingerprint": data_fingerprint, "n_tasks": len(tasks), "probe": probe},
              resolved(trainer.args, lora), checkpoint)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    probe_ids = tokenizer(serve_prompt(prompt_for(tasks[0], rewards.edits)), return_tensors="pt")["input_ids"].to(trainer.model.device)
    rewards_logged = {k: [log[k] for log in recorder.logs if k in log]
                      for k in sorted({k for log in recorder.logs for k in log if k.startswith("rewards/")})}
    zero_std = [log["frac_reward_zero_std"] for log in recorder.logs if "frac_reward_zero_std" in log]
    return run.end(result, recorder, probe_ids, tokenizer, reward_components=rewards_logged,
                   frac_reward_zero_std=zero_std,
                   oracle={"generation_batches": judge.batches, "check_calls": judge.calls,
                           "completions_checked": judge.checked, "completions_compiled": judge.compiled,
                           "completions_tested": judge.tested})


def learnable_tasks(profile: Profile, tasks: list, judge: Judge) -> tuple[list, dict]:
    """The tasks the starting policy solves sometimes (0 < p < 1), each estimated from
    `probe_samples` samples at the GRPO temperature (of a seeded `probe_tasks` of them, where set:
    sampling is most of the cost on a CPU); and the figures per family."""
    from synth.llm.local import BATCH_ROWS, LocalSampler
    settings = profile.grpo
    sampler = LocalSampler(profile.model, max_new_tokens=settings.max_completion_length,
                           temperature=settings.temperature, top_p=settings.top_p, seed=profile.seed,
                           dtype="bfloat16" if settings.bf16 else "float32")
    n = settings.probe_samples
    if settings.probe_tasks and len(tasks) > settings.probe_tasks:  # a seeded sample, in the file's order
        chosen = set(random.Random(f"{profile.seed}:probe").sample(range(len(tasks)), settings.probe_tasks))
        tasks = [t for i, t in enumerate(tasks) if i in chosen]
    samples = sampler.complete([serve_prompt(prompt_for(t, profile.edits)) for t in tasks], k=n, greedy=False,
                               batch_size=max(1, BATCH_ROWS // n), until=code_is_final)
    outcomes = judge.judge([t for t in tasks for _ in range(n)],
                           [answer_for(t, c, profile.edits) for t, cs in zip(tasks, samples) for c in cs])
    solved = [sum(o.solved for o in outcomes[i * n:(i + 1) * n]) for i in range(len(tasks))]
    kept = [t for t, s in zip(tasks, solved) if 0 < s < n]
    figures = {"samples_per_task": n, "by_family": {}}
    for family in sorted({t.family for t in tasks}):
        mine = [s for t, s in zip(tasks, solved) if t.family == family]
        figures["by_family"][family] = {"tasks": len(mine), "never": mine.count(0), "always": mine.count(n),
                                        "kept": sum(0 < s < n for s in mine)}
    if not kept:
        raise InputError(f"no task the policy solves sometimes (0 < p < 1 over {n} samples): GRPO would learn "
                         f"nothing from these groups; {figures['by_family']}")
    return kept, figures
