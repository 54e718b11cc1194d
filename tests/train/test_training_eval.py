"""pass@k against hand-computed values of the unbiased estimator; the bootstrap gate; the packed
batch keeps rows apart; the curriculum sampler re-shuffles per epoch inside the trainer's hook."""
import math

import pytest
import torch

from training.data.collate import WeightedCollator, padding_fraction
from training.data.curriculum import CurriculumSampler
from synth.tasks.passk import bootstrap_gate, pass_at_k


@pytest.mark.parametrize("n,c,k,expected", [
    (1, 1, 1, 1.0),
    (5, 2, 1, 2 / 5),
    (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
    (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    (20, 1, 10, 0.5),  # 1 - C(19,10)/C(20,10) = 1 - 10/20
    (10, 0, 5, 0.0),
    (10, 6, 5, 1.0),  # n - c < k: every draw of 5 contains a pass
    (200, 13, 100, 1 - math.comb(187, 100) / math.comb(200, 100)),
])
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_pass_at_k_rejects_impossible_counts():
    for n, c, k in ((5, 6, 1), (5, 2, 6), (5, 2, 0)):
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


def test_bootstrap_gate_flags_only_a_real_regression():
    tasks = [f"t{i}" for i in range(52)]
    base = {t: (1.0 if i % 2 else 0.0) for i, t in enumerate(tasks)}
    one_flip = dict(base, t1=0.0)  # one task of 52 got worse: the CI includes zero
    gate = bootstrap_gate(base, one_flip, resamples=2000, seed=0)
    assert gate.delta == pytest.approx(-1 / 52) and gate.low < 0 <= gate.high and not gate.regressed
    broad = {t: (0.0 if i % 4 == 1 else base[t]) for i, t in enumerate(tasks)}  # 13 tasks lost
    gate = bootstrap_gate(base, broad, resamples=2000, seed=0)
    assert gate.high < 0 and gate.regressed
    assert bootstrap_gate(base, broad, seed=0).as_dict() == bootstrap_gate(base, broad, seed=0).as_dict()
    with pytest.raises(ValueError, match="share no task"):
        bootstrap_gate({"a": 1.0}, {"b": 1.0})


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2)).eval()


def test_padding_free_batches_keep_rows_apart():
    model = _llama()
    g = torch.Generator().manual_seed(1)
    rows = [{"input_ids": torch.randint(1, 64, (n,), generator=g).tolist(), "labels": [-100] * n, "weight": 1.0}
            for n in (7, 12, 5)]
    batch = WeightedCollator(pad_token_id=0, padding_free=True)(rows)
    assert padding_fraction(batch, rows) == 0.0 and batch["input_ids"].shape == (1, 24)
    with torch.no_grad():
        packed = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=False).logits[0]
        alone = [model(input_ids=torch.tensor([r["input_ids"]])).logits[0] for r in rows]
        # a collator that forgets to restart positions lets row 2 attend to row 1 ...
        leaky = model(input_ids=batch["input_ids"], position_ids=torch.arange(24)[None], use_cache=False).logits[0]
        # ... and so does a forward with the KV cache on: transformers then skips the packed-sequence mask
        cached = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=True).logits[0]
    assert torch.allclose(packed, torch.cat(alone), atol=1e-5)
    assert not torch.allclose(leaky[7:19], alone[1], atol=1e-3)
    assert not torch.allclose(cached[7:19], alone[1], atol=1e-3)
    padded = WeightedCollator(pad_token_id=0, padding_free=False)(rows)
    assert padding_fraction(padded, rows) == pytest.approx(1 - 24 / 36)
    assert padded["token_weights"][2, 5:].sum() == 0  # padding carries no loss weight


def test_curriculum_sampler_follows_difficulty_and_reshuffles_each_epoch():
    difficulties = [3, 1, 2] * 10
    sampler = CurriculumSampler(difficulties, seed=0)
    first = list(sampler)
    assert [difficulties[i] for i in first] == sorted(difficulties)
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first and sorted(second) == sorted(first) == list(range(30))


def test_bucketed_batches_keep_the_difficulty_order_and_cut_padding():
    import random
    rng = random.Random(0)
    lengths = [rng.randint(10, 400) for _ in range(96)]
    difficulties = [i % 3 for i in range(96)]
    order = list(CurriculumSampler(difficulties, seed=0, lengths=lengths, batch_size=8))
    assert sorted(order) == list(range(96))
    assert [difficulties[i] for i in order] == sorted(difficulties)  # curriculum kept

    def padding(indices):
        batches = [indices[b:b + 8] for b in range(0, len(indices), 8)]
        return 1 - sum(lengths[i] for i in indices) / sum(8 * max(lengths[i] for i in b) for b in batches)
    plain = list(CurriculumSampler(difficulties, seed=0))
    assert padding(order) < padding(plain) / 2


def test_bench_train_reports_padding_and_same_loss():
    from benchmarks.train_bench import run_train_bench
    result = run_train_bench(steps=2, repeats=1)
    assert result["padding_free"]["padding_fraction"] == 0.0
    assert result["bucketed"]["padding_fraction"] < result["padded"]["padding_fraction"]
    assert result["same_loss"] and all(result[m]["tokens_per_s"] > 0 for m in ("padded", "bucketed", "padding_free"))


def test_grpo_rewards_judge_vox_completions_through_the_vox_oracle():
    """The reward path for Vox tasks: one `vox check` per completion (the stub here; the user's
    `vox` for real), retired syntax scores 0, and a completion that defines the wrong name too."""
    from conftest import STUB_VOX

    from oracles.vox.oracle import VoxOracle
    from oracles.settings import OracleSettings
    from synth.tasks.task import Task
    from synth.tasks.judge import Judge
    from training.rewards import CompilerRewards

    task = Task(id="v", lang="vox", prompt="Write `double`.", must_define=["double"])
    judge = Judge({"vox": VoxOracle(OracleSettings(vox=str(STUB_VOX)))})
    rewards = {f.__name__: f for f in CompilerRewards(judge, {"v": task}).functions()}
    completions = ["```vox\nfn double(x: int) to int {\n    return x * 2\n}\n```",
                   "```vox\nfn double(x: int) -> int {\n    return x * 2\n}\n```",  # retired `->`
                   "```vox\nfn triple(x: int) to int {\n    return x * 3\n}\n```"]
    ids = ["v"] * 3
    assert rewards["compile"](None, completions, ids) == [1.0, 0.0, 0.0]
    assert rewards["format"](None, completions, ids) == [1.0, 1.0, 1.0]
    assert rewards["tests"](None, completions, ids) == [None, None, None]
    assert judge.calls == 1 and judge.checked == 3  # one judgement for the three reward functions


def test_the_layered_reward_grades_how_far_an_answer_got_on_real_rustc(rust_oracle):
    """0 without code, with broken syntax or compiling by pretending, 0.25 parses, 0.5 compiles but
    does not count, 0.75 counts but fails its tests, 1.0 passes: a group of failing samples still
    differs, and pretending pays less than a real attempt."""
    from synth.tasks.task import Task
    from synth.tasks.judge import Judge
    from training.rewards import CompilerRewards

    tests = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn two() { assert_eq!(super::double(1), 2); }\n}"
    task = Task(id="d", lang="rust", prompt="Write `double`.", must_define=["fn double"], tests=tests)
    rewards = {f.__name__: f for f in CompilerRewards(Judge({"rust": rust_oracle}), {"d": task}).functions()}
    completions = ["I would rather not.", "```rust\nfn double(x: u32) -> u32 { x * }\n```",
                   "```rust\nfn double(x: u32) -> u32 { x * 2u64 }\n```", "```rust\nfn triple(x: u32) -> u32 { x * 3 }\n```",
                   "```rust\nfn double(x: u32) -> u32 { x * 3 }\n```", "```rust\nfn double(x: u32) -> u32 { x * 2 }\n```",
                   "```rust\nfn double(x: u32) -> u32 { std::process::abort() }\n```"]
    ids = ["d"] * len(completions)
    assert rewards["layered"](None, completions, ids) == [0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 0.0]
    assert rewards["compile"](None, completions, ids) == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0]
