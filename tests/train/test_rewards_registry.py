"""Reward components are declared once, with their weights: a component registered in one place
(`training.rewards.register`) gets its declared weight in the resolved GRPO config, or the weight a
profile sets for it, and reaches TRL's reward functions with that weight. (Before the registry, a
new component was weighted `.get(name, 0.0)`: silently 0.)"""
import pytest

from benchmarks.fixtures.tiny_model import build_tiny_model
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from training.grpo import grpo_trainer
from training.run.profile import parse_profile
from synth.tasks.task import Task
from synth.tasks.judge import Judge
from training.rewards import COMPONENTS, CompilerRewards, register
from training.run.trainer_args import UnknownTrainerArgument, grpo_kwargs

BASE = {"model": "m", "output_dir": "/tmp/out"}


@pytest.fixture
def toy():
    """A toy component, declared here and nowhere else: short completions score 1."""
    @register("brevity", weight=0.3)
    def brevity(batch):
        return [float(len(c) < 20) for c in batch.completions]
    yield "brevity"
    del COMPONENTS["brevity"]


def _weights(data: dict) -> dict[str, float]:
    return dict(zip(COMPONENTS, grpo_kwargs(parse_profile(data), "/tmp/x")["reward_weights"]))


def test_a_registered_component_is_weighted_as_declared_or_as_the_profile_sets(toy):
    assert _weights(BASE) == {"compile": 1.0, "tests": 1.0, "format": 0.2, "layered": 0.0, "brevity": 0.3}
    overridden = {**BASE, "grpo": {"reward_weights": {"brevity": 0.7, "format": 0.0}}}
    assert _weights(overridden) == {"compile": 1.0, "tests": 1.0, "format": 0.0, "layered": 0.0, "brevity": 0.7}


def test_an_unregistered_weight_or_a_second_registration_is_an_error(toy):
    with pytest.raises(UnknownTrainerArgument, match=r"\['style'\].*'brevity'"):
        _weights({**BASE, "grpo": {"reward_weights": {"style": 1.0}}})
    with pytest.raises(ValueError, match="'brevity' is registered twice"):
        register("brevity", weight=1.0)(lambda batch: [])


def test_a_registered_component_reaches_trls_reward_functions_with_its_weight(toy, tmp_path):
    model = build_tiny_model(tmp_path / "model", ["fn gcd(a: u64, b: u64) -> u64 { a }"], vocab_size=300)
    profile = parse_profile({"model": str(model), "output_dir": str(tmp_path / "out"),
                             "grpo": {"batch_size": 2, "grad_accum": 1, "num_generations": 2, "max_steps": 1,
                                      "max_completion_length": 8, "reward_weights": {"format": 0.5}}})
    task = Task(id="gcd", lang="rust", prompt="Write `gcd`.", must_define=["fn gcd"])
    rewards = CompilerRewards(Judge({"rust": RustOracle(OracleSettings())}), {"gcd": task})
    trainer, _, _ = grpo_trainer(profile, profile.output_dir, rewards, [task])
    assert trainer.reward_func_names == ["compile", "tests", "format", "layered", "brevity"]
    assert trainer.reward_weights.tolist() == pytest.approx([1.0, 1.0, 0.5, 0.0, 0.3])
    brevity = trainer.reward_funcs[trainer.reward_func_names.index("brevity")]
    assert brevity(prompts=["p", "p"], completions=["fn gcd() {}", "x" * 40], task_id=["gcd", "gcd"]) == [1.0, 0.0]
    assert rewards.judge.batches == 0  # a component that does not ask for the compiler's judgement costs none
