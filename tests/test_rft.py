"""Rejection sampling: API samples through the scripted loopback server, and a local transformers
model built in the test (no hub): its completions will not compile, and the stage says so."""
import re

import pytest
from conftest import EXAMPLE_CRATE
from llm_server import FakeLLMServer

from oracles.rust import RustConfig, RustOracle
from oracles.verdict import Candidate
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.llm.models import ModelSettings
from synth.graphs.rft import ApiSampler, RftConfig, run_rft, task_from_instruction
from synth.llm.client import LLMClient
from synth.llm.ledger import Ledger
from synth.llm.response_cache import ResponseCache


@pytest.fixture(scope="module")
def tasks():
    decls = {d.name: d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
             if d.kind == "fn"}
    return [task_from_instruction(decls[name], f"Write `{name}` as its documentation says.")
            for name in ("gcd", "lcm", "is_prime")]


def test_rft_keeps_compiling_samples_and_pairs_them(tasks, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    by_name = {t.decl.name: t.decl for t in tasks}

    def respond(body):  # n samples share one reply text; the server appends " #i" to samples 1..n-1
        name = re.search(r"Write `(\w+)`", body["messages"][-1]["content"]).group(1)
        if name == "gcd":  # fenced: " #i" lands after the fence, so all 4 samples are the same good code
            return f"```rust\n{by_name[name].clean_text}\n```"
        if name == "lcm":  # bare: " #i" lands in the code, so only sample 0 compiles
            return by_name[name].clean_text
        return "```rust\nnot rust at all\n```"

    with FakeLLMServer(responder=respond) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        sampler = ApiSampler(client, ModelSettings(provider="openai", model="gpt-4o-mini", base_url=server.base_url + "/v1"))
        result = run_rft(tasks, sampler, RustOracle(RustConfig(jobs=2)), RftConfig(k=4, cap_per_task=2))
        assert server.requests == 3  # one request per task: k samples through `n`
    stats = {t["task"]: t for t in result.tasks}
    names = {t.id: t.decl.name for t in tasks}
    by_name_stats = {names[k]: v for k, v in stats.items()}
    assert [by_name_stats[n]["compiled"] for n in ("gcd", "lcm", "is_prime")] == [4, 1, 0]
    assert [by_name_stats[n]["kept"] for n in ("gcd", "lcm", "is_prime")] == [1, 1, 0]  # 4 identical -> 1
    assert len(result.rows) == 2 and {r.provenance.stage for r in result.rows} == {"rft"}
    assert len(result.pairs) == 1 and result.pairs[0]["chosen"] != result.pairs[0]["rejected"]  # lcm only
    fresh = RustOracle(RustConfig(jobs=1))
    assert all(fresh.check_solo(Candidate.of(r.checked_source)).passed for r in result.rows)
    assert by_name_stats["lcm"]["pass@1"] == 0.25 and by_name_stats["lcm"]["pass@4"] == 1.0
    assert by_name_stats["is_prime"]["pass@4"] == 0.0


def _tiny_model(path):
    """A random 1-layer GPT-2 and a byte-level BPE trained here on the example crate."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    texts = [p.read_text() for p in sorted((EXAMPLE_CRATE / "src").glob("*.rs"))]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.save_pretrained(path)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=512, n_embd=32, n_layer=1, n_head=2,
                        eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)


def test_rft_with_a_local_transformers_model_keeps_nothing_and_says_so(tasks, tmp_path):
    from synth.llm.local import LocalSampler

    _tiny_model(tmp_path / "tiny")
    sampler = LocalSampler(tmp_path / "tiny", max_new_tokens=24, seed=1)
    result = run_rft(tasks, sampler, RustOracle(RustConfig(jobs=2)), RftConfig(k=3))
    assert result.rows == [] and all(t["samples"] == 3 and t["compiled"] == 0 for t in result.tasks)
    assert result.message().startswith("rft: 0 rows kept from 3 tasks; 0/9 samples compiled")
    again = run_rft(tasks, LocalSampler(tmp_path / "tiny", max_new_tokens=24, seed=1),
                    RustOracle(RustConfig(jobs=2)), RftConfig(k=3))
    assert again.tasks == result.tasks  # seeded


def test_rft_runs_the_crate_tests_on_compiling_samples(tasks, tmp_path, monkeypatch):
    """A sample that compiles but is wrong (gcd returning a + b) fails the crate's tests: not kept."""
    from oracles.crate import CrateOracle

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    gcd = next(t for t in tasks if t.decl.name == "gcd")
    wrong = gcd.decl.clean_text.replace("gcd(b, a % b)", "a + b")

    with FakeLLMServer(responder=lambda body: f"```rust\n{wrong}\n```") as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        sampler = ApiSampler(client, ModelSettings(provider="openai", model="gpt-4o-mini", base_url=server.base_url + "/v1"))
        compiled_only = run_rft([gcd], sampler, RustOracle(RustConfig(jobs=1)), RftConfig(k=2))
        tested = run_rft([gcd], sampler, RustOracle(RustConfig(jobs=1)), RftConfig(k=2, tests=CrateOracle()))
    assert len(compiled_only.rows) == 1  # it compiles...
    assert tested.rows == [] and tested.stats["tested"] == 2  # ...but the crate's tests reject it


def test_an_empty_or_unrelated_completion_is_not_a_pass(tasks):
    """Next to its context an empty answer compiles; it must still not count."""
    class Empty:
        name = "empty"

        def sample(self, prompt, k):
            return ["", "pub fn something_else() {}"][:k]

    result = run_rft(tasks[:2], Empty(), RustOracle(RustConfig(jobs=1)), RftConfig(k=2))
    assert result.rows == [] and all(t["compiled"] == 0 for t in result.tasks)
