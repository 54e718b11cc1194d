"""Money is a tested resource: the cap is never crossed, the ledger equals what the server
billed, nothing is paid twice. The real openai/anthropic SDKs talk to a loopback server."""
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT
from benchmarks.fixtures.llm_server import FakeLLMServer

from synth.llm.client import BudgetExceeded, CallFailed, KeyMissing, LLMClient, LLMRequest, RetryPolicy
from synth.llm.cost.ledger import Ledger
from synth.llm.cost.prices import PriceMissing, PriceTable
from synth.llm.response_cache import ResponseCache
from synth.llm.cost.tokens import count_messages, count_text

MODEL = "gpt-4o-mini"


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-loopback")


def _request(i: int, base_url: str, provider: str = "openai") -> LLMRequest:
    model = MODEL if provider == "openai" else "claude-haiku-4-5"
    url = base_url + "/v1" if provider == "openai" else base_url
    return LLMRequest(provider, model, ({"role": "user", "content": f"task number {i}: write a function"},),
                      max_tokens=200, base_url=url)


def _billed(server: FakeLLMServer, price) -> float:
    return price.cost(server.input_tokens, server.output_tokens)


def test_concurrent_calls_never_cross_the_cap(tmp_path):
    price = PriceTable().price(MODEL)
    rng = random.Random(7)
    ids = [rng.randrange(1700) for _ in range(2000)]  # repeats: the same cache key asked again
    unique = sorted(set(ids))
    full_cost = sum(price.cost(count_messages([{"role": "user", "content": f"task number {i}: write a function"}],
                                              MODEL), count_text(FakeLLMServer.reply_for(
                                                  {"messages": [{"role": "user", "content":
                                                                 f"task number {i}: write a function"}]}), MODEL))
                    for i in unique)
    cap = full_cost / 2
    with FakeLLMServer(seed=1, latency_s=(0.0, 0.02), p429=0.06, p500=0.04, pdrop=0.03) as server:
        ledger = Ledger(tmp_path / "ledger.sqlite", cap)
        client = LLMClient(ledger, ResponseCache(tmp_path / "cache"), retry=RetryPolicy(base_s=0.005), seed=3)

        def one(i):
            try:
                return client.complete(_request(i, server.base_url))
            except BudgetExceeded:
                return "budget"

        with ThreadPoolExecutor(32) as pool:
            outcomes = list(pool.map(one, ids))
        totals = ledger.totals()
        billed = _billed(server, price)
        print(f"\ncap ${cap:.6f}; settled ${totals.settled_usd:.6f}; billed by the server ${billed:.6f}; "
              f"{totals.calls_settled} paid calls, {client.stats.cache_hits} cache hits, "
              f"{outcomes.count('budget')} refused by the budget, {client.stats.retries} retries, faults {dict(server.faults)}")
    assert len(outcomes) == 2000  # every call returned or was refused
    assert totals.committed_usd <= cap + 1e-12 and totals.settled_usd <= cap + 1e-12
    assert totals.settled_usd == pytest.approx(billed, rel=1e-9, abs=1e-12)
    assert max(server.answered.values()) == 1  # no request answered (and billed) twice
    assert outcomes.count("budget") > 0 and totals.calls_settled > 0  # the cap really bit
    assert server.faults["429"] and server.faults["500"] and server.faults["drop"]
    assert totals.calls_open == 0 and not client.stats.failures


def test_zero_cap_makes_no_paid_call(tmp_path):
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 0.0), ResponseCache(tmp_path / "c"))
        with pytest.raises(BudgetExceeded, match=r"\$0.00 cap"):
            client.complete(_request(1, server.base_url))
        assert server.requests == 0


def test_free_local_model_needs_no_price_and_costs_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 0.0), ResponseCache(tmp_path / "c"))
        req = LLMRequest("openai", "qwen-local", ({"role": "user", "content": "hi"},), base_url=server.base_url + "/v1",
                         free=True)
        assert client.complete(req).cost_usd == 0.0 and server.requests == 1


def test_unknown_model_and_missing_key_are_refused_before_any_call(tmp_path, monkeypatch):
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 5.0), ResponseCache(tmp_path / "c"))
        with pytest.raises(PriceMissing, match="SYNTH_PRICES"):
            client.complete(LLMRequest("openai", "mystery-model", ({"role": "user", "content": "x"},),
                                       base_url=server.base_url + "/v1"))
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(KeyMissing, match="OPENAI_API_KEY"):
            client.complete(_request(2, server.base_url))
        assert server.requests == 0 and client.ledger.totals().calls_open == 0


def test_anthropic_sdk_and_final_failure_recorded(tmp_path):
    with FakeLLMServer(p500=1.0) as server:  # always failing
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"),
                           retry=RetryPolicy(attempts=3, base_s=0.001))
        with pytest.raises(CallFailed, match="InternalServerError"):
            client.complete(_request(1, server.base_url, "anthropic"))
        assert server.requests == 3 and client.ledger.totals().calls_released == 1
        assert client.stats.failures and client.ledger.totals().committed_usd == 0
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l2.sqlite", 1.0), ResponseCache(tmp_path / "c2"))
        response = client.complete(_request(1, server.base_url, "anthropic"))
        assert response.texts[0] and response.cost_usd == pytest.approx(
            PriceTable().price("claude-haiku-4-5").cost(server.input_tokens, server.output_tokens))


@pytest.mark.slow
def test_sigkill_mid_run_then_restart(tmp_path):
    price = PriceTable().price(MODEL)
    cap = 0.0036  # about half of what the 300 calls would cost
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}
    args = [str(tmp_path / "ledger.sqlite"), str(tmp_path / "cache"), str(cap), "300", "8"]
    with FakeLLMServer(seed=2, latency_s=(0.005, 0.03), p429=0.05) as server:
        first = subprocess.Popen([sys.executable, "-m", "helpers.llm_worker", server.base_url + "/v1", *args], env=env,
                                 cwd=ROOT / "tests", stdout=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while sum(server.answered.values()) < 40 and time.time() < deadline:
            time.sleep(0.002)
        assert first.poll() is None, "the first run ended before it could be killed"
        first.send_signal(signal.SIGKILL)
        first.wait()
        answered_before = dict(server.answered)
        second = subprocess.run([sys.executable, "-m", "helpers.llm_worker", server.base_url + "/v1", *args], env=env,
                                cwd=ROOT / "tests", capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-2000:]
        totals = Ledger(tmp_path / "ledger.sqlite", cap).totals()
        repaid = [k for k, n in server.answered.items() if n > 1]
        print(f"\nkilled after {sum(answered_before.values())} answers; {second.stdout.splitlines()[0]}; "
              f"committed ${totals.committed_usd:.6f} of ${cap}; re-paid {len(repaid)}; lost {totals.calls_lost}")
    assert totals.committed_usd <= cap + 1e-12
    # Only a call in flight at the kill (answered by the server, not yet received) can be sent again,
    # and each such call is counted at its worst case as lost; nothing that was received is re-paid.
    assert len(repaid) <= totals.calls_lost <= 8
    # What the server billed = what the ledger settled + what it holds as lost (at worst case, >=).
    billed = price.cost(server.input_tokens, server.output_tokens)
    assert totals.settled_usd <= billed + 1e-12 <= totals.settled_usd + totals.lost_usd + 1e-12
    assert "budget" in second.stdout  # the run stopped at the cap and said so per call
    assert "'lost': 0" not in second.stdout.splitlines()[0] or "'settled': 0" not in second.stdout.splitlines()[0]


def test_retry_after_is_honoured(tmp_path):
    with FakeLLMServer(fail_first=2, retry_after="0.3") as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"),
                           retry=RetryPolicy(base_s=0.001))
        start = time.monotonic()
        client.complete(_request(1, server.base_url))
        assert time.monotonic() - start >= 0.6 and server.requests == 3 and client.stats.retries == 2


# -- plans and runs ---------------------------------------------------------------------------

from synth.llm.cost.plan import plan_calls  # noqa: E402
from helpers.call_runner import run_calls  # noqa: E402


def _templated(i: int, base_url: str) -> LLMRequest:
    body = f"Write a Rust function number {i} that " + "does something useful " * (i % 7)
    return LLMRequest("openai", MODEL, ({"role": "system", "content": "You write Rust."},
                                        {"role": "user", "content": body}),
                      max_tokens=300, base_url=base_url + "/v1", template_hash="codegen-v1")


def test_plan_matches_a_replayed_run_within_ten_percent(tmp_path):
    with FakeLLMServer(seed=4) as server:
        cache = ResponseCache(tmp_path / "c")
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 10.0), cache)
        history = run_calls(client, [_templated(i, server.base_url) for i in range(150)])  # an earlier run
        assert len(history.responses) == 150
        later = [("codegen", _templated(i, server.base_url)) for i in range(1000, 1150)]
        before = server.requests
        plan = plan_calls(later + [("codegen", _templated(3, server.base_url))], PriceTable(), cache)
        assert server.requests == before  # a plan makes no call
        spent_before = client.ledger.totals().settled_usd
        run_calls(client, [r for _, r in later])
        settled = client.ledger.totals().settled_usd - spent_before
        print(f"\nplan: expected ${plan['expected_cost_usd']:.6f} (worst ${plan['worst_case_usd']:.6f}); "
              f"settled ${settled:.6f}; error {abs(plan['expected_cost_usd'] - settled) / settled:.1%}")
    assert plan["cache_hits"] == 1 and plan["calls"] == 150 and plan["rows"][0]["history"] is True
    assert abs(plan["expected_cost_usd"] - settled) <= 0.10 * settled
    assert plan["worst_case_usd"] > plan["expected_cost_usd"]


def test_run_without_cap_makes_no_paid_call_and_says_so(tmp_path):
    with FakeLLMServer() as server:
        cache = ResponseCache(tmp_path / "c")
        paid = LLMClient(Ledger(tmp_path / "paid.sqlite", 1.0), cache)
        paid.complete(_templated(0, server.base_url))  # answered once, now cached
        requests = [_templated(i, server.base_url) for i in range(20)]
        before = server.requests
        client = LLMClient(Ledger(tmp_path / "zero.sqlite", 0.0), cache)
        outcome = run_calls(client, requests)
        message = outcome.message(0.0, client.ledger.totals().committed_usd)
        print("\n" + message)
    assert server.requests == before and client.ledger.totals().committed_usd == 0
    assert list(outcome.responses) == [0] and len(outcome.undone) == 19 and "not made" in message


def test_run_stops_at_the_cap_and_resumes_with_a_higher_one(tmp_path):
    with FakeLLMServer(latency_s=(0, 0.005)) as server:
        cache = ResponseCache(tmp_path / "c")
        requests = [_templated(i, server.base_url) for i in range(120)]
        capped = LLMClient(Ledger(tmp_path / "l.sqlite", 0.002), cache)
        first = run_calls(capped, requests, workers=8)
        assert first.stopped_at_cap and first.undone and "left undone" in first.message(0.002, 0.002)
        assert capped.stats.refused_by_budget <= 8  # once refused, no new call is even tried
        resumed = run_calls(LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), cache), requests)
        assert not resumed.undone and len(resumed.responses) == 120
        assert max(server.answered.values()) == 1  # the resumed run re-paid nothing


# -- batch mode ---------------------------------------------------------------------------------

import json  # noqa: E402

from synth.llm.batch import BatchRunner  # noqa: E402


@pytest.mark.slow
def test_batch_submitted_killed_then_collected_not_resubmitted(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}
    with FakeLLMServer() as server:
        submit = subprocess.Popen([sys.executable, "-m", "helpers.llm_batch_worker", "submit", server.base_url, str(tmp_path)],
                                  env=env, cwd=ROOT / "tests", stdout=subprocess.PIPE, text=True)
        assert submit.stdout.readline().startswith("submitted")
        submit.send_signal(signal.SIGKILL)
        submit.wait()
        created = server.batches_created
        collect = subprocess.run([sys.executable, "-m", "helpers.llm_batch_worker", "collect", server.base_url, str(tmp_path)],
                                 env=env, cwd=ROOT / "tests", capture_output=True, text=True, timeout=120)
        assert collect.returncode == 0, collect.stderr[-2000:]
        report, state = (json.loads(line) for line in collect.stdout.splitlines()[:2])
        assert created == 2 and server.batches_created == 2  # one per provider; none resubmitted
        assert report["collected_batches"] == 2 and report["answers"] == 60 and state["answered"] == 60
        assert max(server.answered.values()) == 1
        print(f"\nbatch: submitted 2 batches, killed, restarted: collected {report['answers']} answers, "
              f"settled ${state['settled']:.6f} at batch prices, {server.batches_created} batches created in all")


def test_batch_adopted_after_a_crash_between_submit_and_record(tmp_path, monkeypatch):
    """Killed after the provider accepted the batch but before its id was written down: the
    restart finds it by the submission id in the batch metadata instead of paying again."""
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        runner = BatchRunner(client, tmp_path / "b.sqlite")
        real_create = runner._create

        def create_then_die(*args):
            real_create(*args)
            raise KeyboardInterrupt("killed before the batch id was recorded")

        monkeypatch.setattr(runner, "_create", create_then_die)
        reqs = [LLMRequest("openai", MODEL, ({"role": "user", "content": f"adopt {i}"},), base_url=server.base_url + "/v1")
                for i in range(5)]
        with pytest.raises(KeyboardInterrupt):
            runner.submit(reqs)
        report = BatchRunner(client, tmp_path / "b.sqlite").collect()
        assert report.adopted == 1 and report.answers == 5 and server.batches_created == 1
        assert all(client.cache.get(r.key()) for r in reqs) and client.ledger.totals().calls_open == 0


def test_samples_are_cached_one_by_one(tmp_path):
    with FakeLLMServer() as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        req = LLMRequest("openai", MODEL, ({"role": "user", "content": "three samples"},), n=3,
                         base_url=server.base_url + "/v1")
        first = client.complete(req)
        assert len(first.texts) == 3 and len({req.key(i) for i in range(3)}) == 3
        assert all(client.cache.get(req.key(i))["text"] == t for i, t in enumerate(first.texts))
        again = client.complete(req)
        assert again.cached and again.texts == first.texts and server.requests == 1
