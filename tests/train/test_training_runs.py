"""Real SFT and GRPO runs (TRL + peft + transformers) on a tiny Llama built here, with the compiler
as the GRPO reward: manifest, resume guard, inert-adapter check, split check, and T1 through the
real trainer. The tiny model is first taught a handful of Rust functions (full-parameter), so its
samples compile sometimes and GRPO sees rewards that differ within a group."""
import json
import shutil
import tomllib
from pathlib import Path

import pytest
import torch

from benchmarks.fixtures.tiny_model import build_tiny_model, pretrain
from synth.cli.main import main
from synth.prompting.templates import system_prompt
from synth.rows.rowfile import read_rows

pytestmark = pytest.mark.slow  # a trainer, Ray or a model server in every test

OPS = {"add": "+", "sub": "-", "mul": "*"}


def _conversations_and_tasks():
    conversations, rows, tasks = [], [], []
    for name, op in OPS.items():
        for n in range(1, 9):
            prompt = f"Write a Rust function `{name}_{n}` that takes an i32 and returns it {name} {n}."
            answer = f"```rust\nfn {name}_{n}(x: i32) -> i32 {{\n    x {op} {n}\n}}\n```"
            conversation = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
            conversations.append(conversation)
            rows.append({"id": f"{name}{n}", "lang": "rust", "messages": conversation, "difficulty": n % 3,
                         "mix_weight": 1.0 + (n % 2)})
            tests = (f"#[cfg(test)]\nmod tests {{\n    use super::*;\n    #[test]\n"
                     f"    fn value() {{ assert_eq!({name}_{n}(10), 10 {op} {n}); }}\n}}")
            tasks.append({"id": f"{name}{n}", "lang": "rust", "prompt": prompt, "tests": tests,
                          "must_define": [f"{name}_{n}"]})
    return conversations, rows, tasks


def _write_jsonl(path: Path, items) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    conversations, rows, tasks = _conversations_and_tasks()
    texts = [system_prompt()] + [c[0]["content"] + c[1]["content"] for c in conversations]
    model = build_tiny_model(root / "model", texts)
    pretrain(model, conversations, steps=150)
    val = [r for r in rows if r["id"].endswith("8")]
    huge = {"id": "huge", "lang": "rust", "messages": [{"role": "user", "content": "x"},
                                                        {"role": "assistant", "content": ""}]}
    _write_jsonl(root / "data" / "train.jsonl", [r for r in rows if r not in val] + [huge])
    _write_jsonl(root / "data" / "val.jsonl", val)
    _write_jsonl(root / "tasks.jsonl", tasks[:8])
    _write_jsonl(root / "heldout.jsonl", tasks[8:12])
    profile = root / "profile.toml"
    profile.write_text("""
model = "model"
data = "data"
output_dir = "out/sft"
seed = 0

[lora]
r = 8
alpha = 16
dropout = 0.0
target_modules = ["q_proj", "v_proj", "o_proj"]

[sft]
learning_rate = 5e-3
batch_size = 4
grad_accum = 2
epochs = 3
logging_steps = 2
max_length = 256
warmup_ratio = 0.0

[grpo]
tasks = "tasks.jsonl"
learning_rate = 5e-3
batch_size = 4
grad_accum = 1
num_generations = 4
max_steps = 3
logging_steps = 1
max_completion_length = 40
temperature = 1.0
warmup_ratio = 0.0

[eval]
tasks = "heldout.jsonl"
k = 2
samples = 4
max_new_tokens = 40
temperature = 1.0
""")
    return root


def _profile_copy(setup, tmp_path, edit=lambda text: text) -> Path:
    for name in ("model", "data"):
        (tmp_path / name).symlink_to(setup / name)
    for name in ("tasks.jsonl", "heldout.jsonl"):
        shutil.copy(setup / name, tmp_path / name)
    path = tmp_path / "profile.toml"
    path.write_text(edit((setup / "profile.toml").read_text()))
    return path


def test_sft_run_completes_with_a_live_adapter_and_a_manifest(setup, capsys):
    assert main(["train", "sft", "--profile", str(setup / "profile.toml"), "--json"]) == 0
    out = setup / "out" / "sft"
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["global_step"] > 0
    assert len(manifest["git"]["commit"]) == 40 and isinstance(manifest["git"]["dirty"], bool)
    assert len(manifest["data"]["fingerprint"]) == 24
    assert manifest["data"]["train"]["zero_supervised"] == 0  # the empty answer still supervises its end marker
    assert manifest["data"]["train"]["trained"] == 22 and manifest["data"]["val"]["trained"] == 3
    assert manifest["versions"]["trl"] and manifest["versions"]["peft"] and manifest["versions"]["torch"]
    times = manifest["step_times"]
    assert times["n"] == manifest["global_step"] - 1 and times["min"] <= times["p50"] <= times["p99"] <= times["max"]
    trainer = manifest["resolved"]["trainer"]  # what the trainer got, from the trainer
    assert trainer["learning_rate"] == 5e-3 and trainer["gradient_accumulation_steps"] == 2
    assert trainer["per_device_train_batch_size"] == 4 and trainer["max_grad_norm"] == 1.0
    assert manifest["resolved"]["lora"]["r"] == 8
    assert manifest["resolved"]["batching"] == {"max_length": 256, "padding_free": True, "bucketed": False}
    assert manifest["padding_fraction"] == 0.0 and manifest["tokens_computed"] > 0  # measured over the run
    assert manifest["adapter_check"]["changed_tensors"] == manifest["adapter_check"]["lora_tensors"] > 0
    assert manifest["adapter_check"]["max_logit_change"] > 0
    assert "eval_loss" in manifest["eval_metrics"]
    assert any("loss" in entry for entry in manifest["log_history"])
    assert (out / "adapter" / "adapter_config.json").exists() and (out / "merged" / "config.json").exists()
    saved = json.loads((out / "adapter" / "tokenizer_config.json").read_text())
    from synth.prompting.chat import chat_template
    template = saved.get("chat_template") or (out / "adapter" / "chat_template.jinja").read_text()
    assert template == chat_template()  # the adapter ships the training template for serving
    from synth.llm.local import LocalSampler
    prompts = [t["prompt"] for t in map(json.loads, (setup / "heldout.jsonl").read_text().splitlines())]
    adapted = LocalSampler(setup / "model", dtype="float32", adapter=out / "adapter", max_new_tokens=24)
    assert type(adapted.model).__name__ == "LlamaForCausalLM"  # merged: no adapter layers left to run
    merged = LocalSampler(out / "merged", dtype="float32", max_new_tokens=24)
    assert adapted.greedy(prompts) == merged.greedy(prompts)  # what SFT saved as merged, decoded alike
    assert adapted.greedy(prompts) != LocalSampler(setup / "model", dtype="float32", max_new_tokens=24).greedy(prompts)


def test_a_planted_inert_adapter_fails_the_run(setup, tmp_path, capsys):
    """A learning rate so small that every update is lost in float32: the loop runs, the loss
    is logged, the adapter learns nothing; the run must fail, not ship it."""
    profile = _profile_copy(setup, tmp_path, lambda t: t.replace("learning_rate = 5e-3\nbatch_size = 4\ngrad_accum = 2",
                                                                "learning_rate = 1e-30\nbatch_size = 4\ngrad_accum = 2"))
    assert main(["train", "sft", "--profile", str(profile)]) == 1
    err = capsys.readouterr().err
    assert "the adapter is inert" in err and "max logit change 0" in err


def test_resume_refuses_a_checkpoint_trained_on_other_data(setup, tmp_path, capsys):
    profile = _profile_copy(setup, tmp_path, lambda t: t.replace("warmup_ratio = 0.0\n\n[grpo]",
                                                                "warmup_ratio = 0.0\nsave_steps = 2\nmax_steps = 4\n\n[grpo]"))
    assert main(["train", "sft", "--profile", str(profile)]) == 0
    checkpoints = sorted((tmp_path / "out" / "sft").glob("checkpoint-*"))
    assert checkpoints and (checkpoints[-1] / "synth_data_fingerprint.json").exists()
    capsys.readouterr()
    assert main(["train", "sft", "--profile", str(profile), "--resume"]) == 0  # same data: resumes
    manifest = json.loads((tmp_path / "out" / "sft" / "run_manifest.json").read_text())
    assert manifest["resumed_from"].endswith("checkpoint-4")
    (tmp_path / "data").unlink()
    shutil.copytree(setup / "data", tmp_path / "data")
    with open(tmp_path / "data" / "train.jsonl", "a") as f:
        f.write(json.dumps({"id": "new", "lang": "rust", "messages": [
            {"role": "user", "content": "Write `zero`."}, {"role": "assistant", "content": "fn zero() {}"}]}) + "\n")
    capsys.readouterr()
    assert main(["train", "sft", "--profile", str(profile), "--resume"]) == 2
    assert "was trained on data" in capsys.readouterr().err


def test_a_leaked_split_is_refused(setup, tmp_path, capsys):
    """T8: a validation row whose answer (modulo comments and whitespace) is also in training."""
    profile = _profile_copy(setup, tmp_path)
    (tmp_path / "data").unlink()
    shutil.copytree(setup / "data", tmp_path / "data")
    train = read_rows(tmp_path / "data" / "train.jsonl")
    twin = json.loads(json.dumps(train[0]))
    twin["id"] = "twin"
    twin["messages"][1]["content"] = twin["messages"][1]["content"].replace("\n    ", "  // same answer\n  ")
    with open(tmp_path / "data" / "val.jsonl", "a") as f:
        f.write(json.dumps(twin) + "\n")
    assert main(["train", "sft", "--profile", str(profile)]) == 2
    assert "share an answer group" in capsys.readouterr().err


def test_grpo_run_rewards_from_the_compiler(setup, tmp_path, capsys):
    # adapters on the top layer only (the loop bench's setting): the backward pass stops there
    profile = _profile_copy(setup, tmp_path, lambda t: t.replace('"o_proj"]\n', '"o_proj"]\nlayers = [1]\n', 1))
    argv = ["train", "grpo", "--profile", str(profile), "--out", str(tmp_path / "grpo"), "--json"]
    assert main(argv + ["--reward", "layerd=1"]) == 2 and "'layered'" in capsys.readouterr().err  # before any work
    assert main(argv + ["--reward", "layered=0.5"]) == 0
    manifest = json.loads((tmp_path / "grpo" / "run_manifest.json").read_text())
    assert manifest["kind"] == "grpo" and manifest["status"] == "done" and manifest["global_step"] == 3
    oracle = manifest["oracle"]
    assert oracle["check_calls"] == oracle["generation_batches"] == 3  # one oracle call per generation batch
    assert oracle["completions_checked"] == 3 * 4
    components = manifest["reward_components"]
    for name in ("compile", "tests", "format", "layered"):
        assert len(components[f"rewards/{name}/mean"]) == 3
    assert max(components["rewards/compile/mean"]) > 0  # some samples compiled and named the function
    assert manifest["adapter_check"]["changed_tensors"] > 0
    assert manifest["resolved"]["lora"]["layers_to_transform"] == [1]
    adapted = json.loads((tmp_path / "grpo" / "adapter" / "adapter_config.json").read_text())
    assert adapted["layers_to_transform"] == [1]
    assert manifest["resolved"]["trainer"]["num_generations"] == 4
    assert manifest["resolved"]["trainer"]["reward_weights"] == [1.0, 1.0, 0.2, 0.5]  # the command line's layered


def test_eval_pass_at_k_with_real_sampling_and_gate(setup, tmp_path, capsys):
    profile = _profile_copy(setup, tmp_path)
    out = tmp_path / "eval.json"
    assert main(["eval", "--profile", str(profile), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    summary = result["summary"]
    assert summary["tasks"] == 4 and summary["samples"] == 16 and result["oracle"]["check_calls"] == 1
    assert result["families"]["codegen"]["tasks"] == 4 and "repair" not in result["families"]
    for task in result["per_task"].values():
        assert task["n"] == 4 and 0 <= task["passed"] <= task["solved"] * 4 <= 4
    from synth.tasks.passk import pass_at_k
    assert summary["pass_at_1"] == pytest.approx(
        round(sum(pass_at_k(4, t["passed"], 1) for t in result["per_task"].values()) / 4, 4))
    assert summary["pass@2"] == pytest.approx(
        round(sum(pass_at_k(4, t["passed"], 2) for t in result["per_task"].values()) / 4, 4))
    # Gate: against itself no regression; against a baseline that passed everything, a regression
    # unless this run passed everything too.
    again = tmp_path / "again.json"
    assert main(["eval", "--profile", str(profile), "--out", str(again), "--baseline", str(out)]) == 0
    gate = json.loads(again.read_text())["gate"]
    assert gate["all"]["regressed"] is False and gate["codegen"]["delta"] == 0
    perfect = json.loads(out.read_text())
    for task in perfect["per_task"].values():
        task["pass@1"] = 1.0
    (tmp_path / "perfect.json").write_text(json.dumps(perfect))
    code = main(["eval", "--profile", str(profile), "--out", str(again), "--baseline", str(tmp_path / "perfect.json")])
    gate = json.loads(again.read_text())["gate"]
    assert gate["all"]["regressed"] == (summary["pass_at_1"] < 1.0) and code == (1 if gate["all"]["regressed"] else 0)


def test_eval_draws_the_samples_again_each_with_a_seed_of_its_own(setup, tmp_path, capsys):
    """`synth eval --draws 3`: draw 0 is the evaluation one draw makes (the same answers as without
    draws); draws 1 and 2 are written beside it, each with its answers, drawn with seeds of their
    own; `draws` lists every draw's rate and their mean. Greedy answers cannot be drawn again."""
    from training.evaluation.evaluate import answers_path
    profile = _profile_copy(setup, tmp_path)
    plain, drawn = tmp_path / "plain.json", tmp_path / "drawn.json"
    assert main(["eval", "--profile", str(profile), "--out", str(plain)]) == 0
    assert main(["eval", "--profile", str(profile), "--draws", "3", "--out", str(drawn)]) == 0
    one, three = json.loads(plain.read_text()), json.loads(drawn.read_text())
    assert three["per_task"] == one["per_task"] and answers_path(drawn).read_text() == answers_path(plain).read_text()
    files = [tmp_path / name for name in three["draws"]["files"]]
    assert files == [drawn, tmp_path / "drawn.draw1.json", tmp_path / "drawn.draw2.json"]
    draws = [json.loads(f.read_text()) for f in files]
    assert len({answers_path(f).read_text() for f in files}) == 3  # other seeds, other samples
    seeds = three["draws"]["seeds"]
    assert len(set(seeds)) == 3 and [d["seed"] for d in draws[1:]] == seeds[1:]
    rates = three["draws"]["families"]["codegen"]["pass_at_1"]
    assert rates["each"] == [d["families"]["codegen"]["pass_at_1"] for d in draws]
    assert rates["mean"] == pytest.approx(sum(rates["each"]) / 3, abs=1e-4)
    assert [d["oracle"]["completions_checked"] for d in draws] == [16, 16, 16]  # each draw its own 4 x 4 answers
    greedy = ["eval", "--profile", str(profile), "--decoding", "greedy", "--draws", "2", "--out", str(tmp_path / "g.json")]
    assert main(greedy) != 0 and "draws = 2" in capsys.readouterr().err


def test_greedy_eval_is_deterministic_and_batches_prompts(setup, tmp_path, capsys, monkeypatch):
    """`synth eval --decoding greedy`: one answer per task, the same bytes twice, the prompts
    decoded a batch at a time (one decoding of the 4 tasks, not 4)."""
    from synth.llm.local import LocalSampler
    calls = []
    decode = LocalSampler._decode
    monkeypatch.setattr(LocalSampler, "_decode",
                        lambda self, ids, *a, **k: calls.append(ids.shape[0]) or decode(self, ids, *a, **k))
    profile = _profile_copy(setup, tmp_path)
    outs = [tmp_path / "first.json", tmp_path / "second.json"]
    for out in outs:
        assert main(["eval", "--profile", str(profile), "--decoding", "greedy", "--out", str(out)]) == 0
    first, second = (json.loads(p.read_text()) for p in outs)
    assert first["summary"]["samples"] == first["summary"]["tasks"] == 4
    assert first["per_task"] == second["per_task"] and first["families"] == second["families"]
    assert calls == [4, 4]  # each evaluation: one batch of the 4 prompts (batch_size 16)


def test_eval_decodes_in_the_dtype_asked_for(setup, tmp_path, monkeypatch):
    """`synth eval --dtype bfloat16` decodes with bfloat16 weights and says so in its settings; the
    profile's dtype (float32 by default) otherwise."""
    from synth.llm.local import LocalSampler
    seen = []
    decode = LocalSampler._decode
    monkeypatch.setattr(LocalSampler, "_decode",
                        lambda self, ids, *a, **k: seen.append(self.model.dtype) or decode(self, ids, *a, **k))
    profile = _profile_copy(setup, tmp_path)
    for flags in ([], ["--dtype", "bfloat16"]):
        out = tmp_path / f"eval{len(flags)}.json"
        assert main(["eval", "--profile", str(profile), "--decoding", "greedy", *flags, "--out", str(out)]) == 0
        assert json.loads(out.read_text())["settings"]["dtype"] == (flags[-1] if flags else "float32")
    assert [str(d) for d in seen] == ["torch.float32", "torch.bfloat16"]


def _sgd_step(setup, tmp_path, batch_size: int, grad_accum: int, break_normalisation=False):
    """One optimizer step of the real trainer over the same 4 rows; returns the LoRA weights."""
    from datasets import Dataset

    from training.data.dataset import load_split
    from training.run.profile import parse_profile
    from training.sft import build_trainer, load_model

    data = tomllib.loads((setup / "profile.toml").read_text())
    data.update(model=str(setup / "model"), data=str(setup / "data"), output_dir=str(tmp_path / f"{batch_size}"))
    data["sft"].update(batch_size=batch_size, grad_accum=grad_accum, max_steps=1, optimizer="sgd",
                       learning_rate=1.0, max_grad_norm=1e9)
    profile = parse_profile(data)
    train, _ = load_split(profile.data)
    model, tokenizer = load_model(profile.model)
    trainer, *_ = build_trainer(profile, train[:4], [], model, tokenizer, profile.output_dir, "x")
    if break_normalisation:  # the audit's kind of bug: each micro-batch normalised on its own
        original = trainer.compute_loss
        trainer.compute_loss = lambda m, inputs, return_outputs=False, num_items_in_batch=None: original(
            m, inputs, return_outputs, (inputs["labels"][:, 1:] != -100).sum())
    assert isinstance(trainer.train_dataset, Dataset)
    trainer.train()
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}


def test_t1_accumulated_micro_batches_equal_one_big_batch_in_the_trainer(setup, tmp_path):
    big = _sgd_step(setup, tmp_path, batch_size=4, grad_accum=1)
    accumulated = _sgd_step(setup, tmp_path, batch_size=1, grad_accum=4)
    for name in big:
        assert torch.allclose(big[name], accumulated[name], atol=1e-5, rtol=1e-4), name
    broken = _sgd_step(setup, tmp_path, batch_size=1, grad_accum=4, break_normalisation=True)
    assert any(not torch.allclose(big[n], broken[n], atol=1e-5, rtol=1e-4) for n in big)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_t1_two_processes_under_accelerate_launch_equal_one_big_batch(setup, tmp_path):
    """The scale-out path, for real: `accelerate launch` with 2 processes (DDP over gloo on this
    CPU), 1 row per device x 2 accumulated micro-batches, gives the same update as one process
    with a batch of 4: the loss is normalised by the step's supervised tokens across ranks."""
    import subprocess
    import sys

    from safetensors.torch import load_file

    def profile(name, batch_size, grad_accum):
        text = (setup / "profile.toml").read_text().replace(
            "learning_rate = 5e-3\nbatch_size = 4\ngrad_accum = 2\nepochs = 3",
            f"learning_rate = 1.0\noptimizer = \"sgd\"\nmax_grad_norm = 1e9\nbatch_size = {batch_size}\n"
            f"grad_accum = {grad_accum}\nmax_steps = 1")
        path = tmp_path / f"{name}.toml"
        path.write_text(text.replace('output_dir = "out/sft"', f'output_dir = "{tmp_path / name}"')
                        .replace('model = "model"', f'model = "{setup / "model"}"')
                        .replace('data = "data"', f'data = "{setup / "data"}"'))
        return path

    bin_dir = Path(sys.executable).parent
    single = subprocess.run([str(bin_dir / "synth"), "train", "sft", "--profile", str(profile("one", 4, 1)), "--json"],
                            capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-2000:]
    ddp = subprocess.run([str(bin_dir / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2",
                          "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                          "--main_process_port", str(_free_port()), "-m", "synth.cli.main", "train", "sft",
                          "--profile", str(profile("ddp", 1, 2)), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert ddp.returncode == 0, ddp.stderr[-2000:]
    manifest = json.loads((tmp_path / "ddp" / "run_manifest.json").read_text())
    assert manifest["world_size"] == 2
    one = load_file(tmp_path / "one" / "adapter" / "adapter_model.safetensors")
    two = load_file(tmp_path / "ddp" / "adapter" / "adapter_model.safetensors")
    moved = max(float(one[k].abs().max()) for k in one if "lora_B" in k)
    assert moved > 1e-3
    for key in one:
        assert torch.allclose(one[key], two[key], atol=1e-6), key


def test_same_seed_same_adapter_bytes(setup, tmp_path):
    """Deterministic: the same profile and seed give a byte-identical adapter; another seed does not."""
    def adapter(name: str, seed: int) -> bytes:
        profile = tmp_path / f"{name}.toml"
        profile.write_text((setup / "profile.toml").read_text().replace("seed = 0", f"seed = {seed}")
                           .replace('model = "model"', f'model = "{setup / "model"}"')
                           .replace('data = "data"', f'data = "{setup / "data"}"'))
        assert main(["train", "sft", "--profile", str(profile), "--out", str(tmp_path / name), "--json"]) == 0
        return (tmp_path / name / "adapter" / "adapter_model.safetensors").read_bytes()
    first, second, other = adapter("a", 0), adapter("b", 0), adapter("c", 1)
    assert first == second and first != other


def test_grpo_probe_keeps_only_the_tasks_the_policy_solves_sometimes(setup, tmp_path):
    """`probe_samples` / `probe_tasks`: a seeded sample of the tasks is probed, and GRPO gets only
    those with 0 < p < 1 (a group of equal rewards teaches nothing); none such is an error."""
    from oracles.factory import build_oracles
    from synth.tasks.judge import Judge
    from synth.tasks.task import load_tasks
    from training.grpo import learnable_tasks
    from training.run.profile import load_profile
    profile = load_profile(_profile_copy(setup, tmp_path))
    profile.grpo.probe_samples, profile.grpo.probe_tasks = 4, 6
    tasks = load_tasks(setup / "tasks.jsonl")
    judge = Judge(build_oracles({"rust"}, profile.oracle))
    kept, figures = learnable_tasks(profile, tasks, judge)
    counts = figures["by_family"]["codegen"]
    assert counts["tasks"] == 6 and counts["never"] + counts["always"] + counts["kept"] == 6
    assert 0 < len(kept) == counts["kept"] < 6 and {t.id for t in kept} < {t.id for t in tasks}
    again, _ = learnable_tasks(profile, tasks, judge)
    assert [t.id for t in again] == [t.id for t in kept]  # seeded: the same tasks each time

    class RejectAll:  # an oracle no sample passes: every group has equal rewards
        def check(self, candidates):
            from oracles.verdict import Verdict
            return [Verdict(candidate_id=c.id, passed=False, oracle="x", toolchain="x") for c in candidates]
    with pytest.raises(ValueError, match="no task the policy solves sometimes"):
        learnable_tasks(profile, tasks, Judge({"rust": RejectAll()}))
