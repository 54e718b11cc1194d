"""The nightly RFT refresh with the policy sampling itself (`provider = "local"`, a model folder and
a LoRA adapter): the doc and repair lanes' training-side tasks are sampled in-process, never a
held-out crate's; a refresh with the same adapter samples nothing, a new adapter at the same path
samples every task again (and nothing else is redone), a changed function samples only its own
tasks. No key, $0."""
import json
import shutil

import pytest

from benchmarks.fixtures.tiny_model import build_tiny_model, lora_adapter
from synth.settings.config import load_config
from synth.lanes import LANES
from synth.pipeline.run import run_pipeline
from synth.rows.rowfile import read_rows

FN = "/// Returns {i} more than `x`.\npub fn {name}_{i}(x: u64) -> u64 {{\n    let y = x + {i};\n    y\n}}\n\n"


def crate(root, name: str, prefix: str, count: int = 3):
    (root / name / "src").mkdir(parents=True)
    (root / name / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / name / "src" / "lib.rs").write_text("".join(FN.format(i=i, name=prefix) for i in range(count)))


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    root = tmp_path_factory.mktemp("policy")
    model = build_tiny_model(root / "model", [FN.format(i=i, name="plus") for i in range(9)] * 4)
    return model, lora_adapter(model, root / "adapter-a", seed=1), lora_adapter(model, root / "adapter-b", seed=2)


def _rows(root) -> list[dict]:
    path = root / "run" / "rows" / "rft.jsonl.zst"
    return read_rows(path) if path.exists() else []


def run(config):
    summary = run_pipeline(load_config(config, LANES))
    return {name: summary.lanes.get(name, {}) for name in ("repair", "doclane", "rft")}


def test_refresh_samples_from_the_newest_adapter_and_only_what_changed(tmp_path, policy):
    model, adapter_a, adapter_b = policy
    crate(tmp_path, "alpha", "plus")
    crate(tmp_path, "beta", "add")
    shutil.copytree(adapter_a, tmp_path / "latest")  # the stable path a training run leaves its adapter at
    config = tmp_path / "synth.toml"
    config.write_text(
        '[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "alpha"\nlang = "rust"\n\n'
        '[[sources]]\npath = "beta"\nlang = "rust"\n\n'
        f'[models.policy]\nprovider = "local"\nmodel = "{model}"\nadapter = "latest"\nmax_tokens = 12\n\n'
        '[lanes.repair]\nenabled = true\n\n[lanes.doclane]\nenabled = true\n\n'
        '[lanes.rft]\nenabled = true\nmodel = "policy"\nk = 2\n\n[tasks]\nheldout_crates = ["beta"]\n')
    first = run(config)
    rft = first["rft"]
    assert rft["processed"] == rft["items"] > 3 and rft["spent_usd"] == 0, first
    assert set(rft["by_family"]) == {"codegen", "repair"} and rft["by_family"]["codegen"]["tasks"] == 3
    assert all(f["samples"] == 2 * f["tasks"] for f in rft["by_family"].values())
    assert rft["by_family"]["codegen"]["tasks"] == 3  # alpha's three functions; beta's are held out
    rejected = [json.loads(line) for line in (tmp_path / "run" / "rejected" / "rft.jsonl").read_text().splitlines()]
    assert 0 < len(rejected) <= rft["items"] and len(rejected) + len(_rows(tmp_path)) >= rft["items"]
    assert {(r["kind"], r["reason"]) for r in rejected} <= {("no sample passed", "no sample passed")}

    same = run(config)
    assert same["rft"]["processed"] == 0 and same["rft"]["reused"] == rft["items"]

    shutil.rmtree(tmp_path / "latest")
    shutil.copytree(adapter_b, tmp_path / "latest")  # tonight's training left a new adapter at the same path
    newer = run(config)
    assert newer["rft"]["processed"] == rft["items"]
    assert newer["doclane"]["processed"] == 0 and newer["repair"]["processed"] == 0

    lib = tmp_path / "alpha" / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("x + 1;", "x + 1 + 0;"))  # one function changes
    edited = run(config)
    assert edited["doclane"]["processed"] == 1 and edited["repair"]["processed"] == 1
    assert 1 <= edited["rft"]["processed"] < rft["items"]  # only that function's tasks (doc and repair)

    config.write_text(config.read_text().replace("k = 2\n", "k = 2\nlimit = 2\n"))
    limited = run(config)["rft"]  # two of the tasks, all sampled already: nothing new to sample
    assert limited["items"] == 2 and limited["processed"] == 0 and limited["reused"] == 2


def test_only_rl_samples_exactly_the_rl_tasks_the_run_writes(tmp_path, policy):
    """With a per_group cap, a declaration's mutants beyond the cap are no RL task: RFT must not
    sample them (it did, sampling before the cap)."""
    model, _, _ = policy
    crate(tmp_path, "alpha", "plus")
    config = tmp_path / "synth.toml"
    config.write_text(
        '[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "alpha"\nlang = "rust"\n\n'
        f'[models.policy]\nprovider = "local"\nmodel = "{model}"\nmax_tokens = 8\n\n'
        '[lanes.repair]\nenabled = true\n\n[lanes.doclane]\nenabled = true\n\n'
        '[lanes.rft]\nenabled = true\nmodel = "policy"\nk = 1\nonly_rl = true\n\n'
        '[tasks]\nheldout_crates = []\nrl_share = 0.99\nper_group = 1\n')
    rft = run(config)["rft"]
    rl = [json.loads(line) for line in (tmp_path / "run" / "tasks" / "rl.jsonl").read_text().splitlines()]
    by_group = {}
    for task in rl:
        by_group.setdefault(task["group"], []).append(task["id"])
    assert rl and all(len(ids) == 1 for ids in by_group.values())  # the cap held in the tasks file
    assert rft["items"] == len(rl)  # and RFT sampled those, no more


def test_a_run_killed_while_sampling_keeps_the_parts_it_finished(tmp_path, policy, monkeypatch):
    from synth.generation.rft import PolicySampler
    from synth.lanes.rft import RftLane
    model, _, _ = policy
    crate(tmp_path, "alpha", "plus", count=4)
    config = tmp_path / "synth.toml"
    config.write_text(
        '[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "alpha"\nlang = "rust"\n\n'
        f'[models.policy]\nprovider = "local"\nmodel = "{model}"\nmax_tokens = 8\n\n'
        '[lanes.repair]\nenabled = false\n\n[lanes.doclane]\nenabled = true\n\n'
        '[lanes.rft]\nenabled = true\nmodel = "policy"\nk = 2\n\n[tasks]\nenabled = false\n')
    monkeypatch.setattr(RftLane, "chunk", 2)
    real, calls = PolicySampler.complete, []

    def killed_on_the_second_part(self, prompts, k):
        calls.append(len(prompts))
        if len(calls) == 2:
            raise KeyboardInterrupt  # what a SIGINT raises mid-sampling
        return real(self, prompts, k)
    monkeypatch.setattr(PolicySampler, "complete", killed_on_the_second_part)
    with pytest.raises(KeyboardInterrupt):
        run(config)
    monkeypatch.setattr(PolicySampler, "complete", real)
    resumed = run(config)["rft"]
    assert calls == [2, 2] and resumed["items"] == 4 and resumed["reused"] == 2 and resumed["processed"] == 2
