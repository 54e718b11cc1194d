"""The provider registry: a third provider is one module plus one `register` line and works end
to end through the real client (reserve, call, settle, cache) against the loopback server; an
unknown provider name is an error everywhere, never another provider's branch."""
import json

import pytest
from benchmarks.fixtures.llm_server import FakeLLMServer
from pydantic import ValidationError
from helpers.toy_provider import LoopbackProvider

from synth.llm.batch import BatchRunner
from synth.llm.client import KeyMissing, LLMClient, LLMRequest
from synth.llm.cost.ledger import Ledger
from synth.settings.config import SynthSettings
from synth.llm.models import ModelSettings
from synth.llm.cost.plan import plan_calls
from synth.llm.cost.prices import PriceTable
from synth.llm.providers import BatchUnsupported, UnknownProvider, names, provider, register
from synth.llm.response_cache import ResponseCache
from synth.llm.cost.tokens import count_messages, count_text
from synth.prompting.templates import template_hash

TOY = register(LoopbackProvider())  # the one registry line a new provider needs


@pytest.fixture()
def prices(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"loopback-mini": {"input": 0.5, "output": 2.0}}}))
    return PriceTable(path)


def test_toy_provider_end_to_end(tmp_path, monkeypatch, prices):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # only the toy's own key is set
    monkeypatch.setenv("LOOPBACK_API_KEY", "loopback-test-key")
    calls_before = TOY.calls
    with FakeLLMServer() as server:
        settings = ModelSettings(provider="loopback", model="loopback-mini", base_url=server.base_url + "/v1",
                                 max_tokens=120)
        req = settings.request("Write a Rust function that adds two numbers.", "repair")
        ledger = Ledger(tmp_path / "l.sqlite", 1.0)
        client = LLMClient(ledger, ResponseCache(tmp_path / "c"), prices)
        first = client.complete(req)
        again = client.complete(req)
        plan = plan_calls([("toy", req)], prices, client.cache)
    body = {"messages": [{"role": "user", "content": "Write a Rust function that adds two numbers."}]}
    assert TOY.calls - calls_before == 1 and server.requests == 1  # reached by name, once; then cached
    assert first.texts == [FakeLLMServer.reply_for(body)] and not first.cached
    assert first.cost_usd == pytest.approx(prices.price("loopback-mini").cost(server.input_tokens,
                                                                               server.output_tokens))
    totals = ledger.totals()
    assert totals.calls_settled == 1 and totals.calls_open == 0 and totals.settled_usd == pytest.approx(first.cost_usd)
    assert again.cached and again.texts == first.texts and plan["cache_hits"] == 1
    # the toy counts tokens its own way (the documented approximation), not OpenAI's BPE
    assert count_text("fn add(a: i32) -> i32 { a + 1 }", "loopback-mini", "loopback") > count_text(
        "fn add(a: i32) -> i32 { a + 1 }", "loopback-mini", "openai")


def test_toy_provider_key_and_batch_mode_are_its_own(tmp_path, monkeypatch, prices):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    monkeypatch.delenv("LOOPBACK_API_KEY", raising=False)
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"), prices)
        req = ModelSettings(provider="loopback", model="loopback-mini",
                            base_url=server.base_url + "/v1").request("x", "repair")
        with pytest.raises(KeyMissing, match="LOOPBACK_API_KEY"):
            client.complete(req)
        monkeypatch.setenv("LOOPBACK_API_KEY", "loopback-test-key")
        with pytest.raises(BatchUnsupported, match="'loopback' has no batch API"):
            BatchRunner(client, tmp_path / "b.sqlite").submit([req])
        assert server.requests == 0 and client.ledger.totals().calls_open == 0  # nothing reserved, nothing sent


def test_unknown_provider_fails_loudly_everywhere(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-loopback")
    with pytest.raises(ValidationError, match=r"unknown LLM provider 'mistral'; known providers: anthropic, "
                                              r"local, loopback, openai"):
        SynthSettings.model_validate({"sources": [{"path": ".", "lang": "rust"}],
                                    "models": {"m": {"provider": "mistral", "model": "gpt-4o-mini"}}})
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        req = LLMRequest("mistral", "gpt-4o-mini", ({"role": "user", "content": "hi"},),
                         base_url=server.base_url + "/v1")
        with pytest.raises(UnknownProvider, match="'mistral'"):
            client.complete(req)
        with pytest.raises(UnknownProvider, match="'mistral'"):
            BatchRunner(client, tmp_path / "b.sqlite").submit([req])
        assert server.requests == 0 and client.ledger.totals().calls_open == 0
    with pytest.raises(UnknownProvider, match="known providers"):
        count_messages([{"role": "user", "content": "hi"}], "gpt-4o-mini", "mistral")
    with pytest.raises(UnknownProvider):
        plan_calls([("x", req)], PriceTable(), ResponseCache(tmp_path / "c2"))


def test_registry_refuses_a_taken_name_and_a_non_provider():
    class Impostor(LoopbackProvider):
        name = "openai"

    with pytest.raises(ValueError, match="already taken by OpenAIProvider"):
        register(Impostor())
    with pytest.raises(TypeError):
        register(object())
    assert provider("openai").key_env == "OPENAI_API_KEY" and {"openai", "anthropic", "loopback"} <= set(names())


def test_model_settings_request_key_and_fingerprint_are_stable():
    settings = ModelSettings(provider="openai", model="gpt-4o-mini", max_tokens=300, temperature=0.2)
    req = settings.request("fn add(a: i32, b: i32) -> i32", "repair")
    assert req == LLMRequest("openai", "gpt-4o-mini", ({"role": "user", "content": "fn add(a: i32, b: i32) -> i32"},),
                             max_tokens=300, temperature=0.2, template_hash=template_hash("repair"))
    # the cache key of a request is what decides a cache hit: pinned to the value before the registry
    pinned = LLMRequest("openai", "gpt-4o-mini", ({"role": "user", "content": "fn add(a: i32, b: i32) -> i32"},),
                        max_tokens=300, temperature=0.2, template_hash="5d20780c56a0")
    assert pinned.key() == "820f3352e0720eea7dd8c3a54107062df05d3036bfe4a5593f0d40e1bd836e5f"
    assert LLMRequest("anthropic", "claude-haiku-4-5", ({"role": "system", "content": "s"},
                                                        {"role": "user", "content": "u"}),
                      seed=3, n=2, base_url="http://h").key() == (
        "a9b14b7b3ebe11595caaeca444f20a56204d9bc7f01a3b0d79df0cb697085f94")
    # fingerprints print the settings: the same text as the former ModelSpec, so stores keep theirs
    assert str(settings) == ("ModelSpec(provider='openai', model='gpt-4o-mini', base_url=None, max_tokens=300, "
                             "temperature=0.2, free=False)")
    assert hash(settings) == hash(settings.model_copy())
    assert provider(ModelSettings(provider="anthropic", model="claude-haiku-4-5").provider).key_env == "ANTHROPIC_API_KEY"
    with pytest.raises(ValidationError, match="max_tokens"):
        ModelSettings(provider="openai", model="gpt-4o-mini", max_tokens=0)
    with pytest.raises(ValidationError, match="extra"):
        ModelSettings(provider="openai", model="gpt-4o-mini", temprature=0.2)
