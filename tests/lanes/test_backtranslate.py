"""Back-translation graph end to end: the real openai SDK against a scripted loopback server,
the real Rust oracle, LangGraph wiring."""
import re

import pytest
from conftest import EXAMPLE_CRATE
from benchmarks.fixtures.llm_server import FakeLLMServer

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.model import standalone_source
from synth.generation.settings import BacktranslateSettings
from synth.generation.backtranslate import run_backtranslation
from synth.llm.models import ModelSettings
from synth.generation.instructions import instruction_problems
from synth.llm.client import LLMClient
from synth.llm.cost.ledger import Ledger
from synth.llm.response_cache import ResponseCache

CHOSEN = {"gcd", "lcm", "is_prime", "clamp", "word_count", "distance"}


@pytest.fixture(scope="module")
def decls():
    found = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    return [d for d in found if d.name in CHOSEN and d.kind in ("fn", "method")]


def _good(name: str, extra: str = "") -> str:
    return (f"Write a function `{name}` that takes its inputs as described and returns the result, "
            f"handling the edge cases carefully.{extra}")


def scripted(decls):
    by_name = {d.name: d for d in decls}

    def respond(body):
        prompt = body["messages"][-1]["content"]
        if "Write the task a programmer" in prompt:
            name = re.search(r"its name `(\w+)`", prompt).group(1)
            retry = "previous attempt had problems" in prompt
            if name == "lcm" and not retry:
                return "```rust\nfn lcm() {}\n```"  # a code block: the check sends it back
            if name == "word_count":
                return "Count the words of a text, splitting on whitespace, and return how many there are."
            if name == "distance":
                return _good("distance", " It is a method of `Point` measuring Euclidean distance.")
            return _good(name)
        if "Write the Rust declaration this task asks for" in prompt:
            name = re.search(r"function `(\w+)`", prompt).group(1)
            if name in ("is_prime", "clamp"):
                return f"```rust\npub fn {name}() -> u8 {{\n    \"broken\"\n}}\n```"
            return f"```rust\n{by_name[name].clean_text}\n```"
        if "Does this task describe the code" in prompt:
            name = re.search(r"function `(\w+)`", prompt).group(1)
            return "YES, it is complete." if name == "is_prime" else "NO, the task is too vague."
        return None

    return respond


def test_backtranslation_accepts_exactly_what_it_should(decls, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    with FakeLLMServer(responder=scripted(decls)) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        models = {"w": ModelSettings(provider="openai", model="gpt-4o-mini", base_url=server.base_url + "/v1")}
        config = BacktranslateSettings(model="w", max_attempts=3, workers=3)
        result = run_backtranslation(decls, client, RustOracle(OracleSettings(jobs=2)), config, models)
    ratings = {r.provenance.decl_hash: r.rating for r in result.rows}
    by_hash = {d.hash: d.name for d in decls}
    assert {by_hash[h]: r for h, r in ratings.items()} == {"gcd": 5, "lcm": 5, "is_prime": 4, "distance": 5}
    reasons = {r.about["name"]: r.reason for r in result.rejected}
    assert set(reasons) == {"clamp", "word_count"}
    assert "judge finds it unfaithful" in reasons["clamp"]
    assert "does not name `word_count`" in reasons["word_count"]
    lcm = next(r for r in result.rows if by_hash[r.provenance.decl_hash] == "lcm")
    assert lcm.attempts == 2 and "```" not in lcm.prompt.rsplit("```\n\n", 1)[-1]  # the instruction, after its context
    assert result.stats["write"] == 1 + 2 + 1 + 3 + 3 + 1  # gcd, lcm, is_prime, clamp, word_count, distance

    # Every accepted row: the answer is the original declaration and passes the oracle, checked again.
    fresh = RustOracle(OracleSettings(jobs=1))
    for row in result.rows:
        decl = next(d for d in decls if d.hash == row.provenance.decl_hash)
        assert row.response == decl.clean_text and row.checked_source == standalone_source(decl)
        assert fresh.check_solo(Candidate.of(row.checked_source)).passed
        assert decl.clean_text.strip() not in row.prompt  # the answer is not in its own prompt


def test_instruction_checks():
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    gcd = next(d for d in decls if d.name == "gcd")
    assert instruction_problems(_good("gcd"), gcd) == []
    assert "contains a code block" in instruction_problems(_good("gcd", " ```rust\nx\n```"), gcd)
    count = next(d for d in decls if d.name == "word_count")
    leak = " Return `text.split_whitespace().count()`."
    assert any("copies code" in p for p in instruction_problems(_good("word_count", leak), count))
    assert not any("copies code" in p for p in instruction_problems(_good("word_count", " Split on spaces."), count))
    assert "looks truncated (no closing punctuation)" in instruction_problems(_good("gcd") + " and then", gcd)
    assert any("too short" in p for p in instruction_problems("gcd.", gcd))


def deterministic_script(body):
    """Replies that depend only on the request: instruction names the declaration; the code is the
    original for some, broken for others; the judge says YES for some of the broken ones."""
    import hashlib
    from synth.extract import extract_paths as _extract
    prompt = body["messages"][-1]["content"]
    if "Write the task a programmer" in prompt:
        name = re.search(r"its name `(\w+)`", prompt).group(1)
        owner = re.search(r"a method of `([^`]+)`", prompt)
        extra = f" It is a method of `{owner.group(1).lstrip('&')}`." if owner else ""
        return _good(name, extra)
    if "Write the Rust declaration this task asks for" in prompt:
        name = re.search(r"function `(\w+)`", prompt).group(1)
        if int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 == 0:
            return f"```rust\npub fn {name}() -> u8 {{\n    \"broken\"\n}}\n```"
        decls = {d.name: d for d in _extract([EXAMPLE_CRATE]).declarations if d.kind in ("fn", "method")}
        return f"```rust\n{decls[name].clean_text}\n```"
    if "Does this task describe the code" in prompt:
        return "YES" if "e" in re.search(r"function `(\w+)`", prompt).group(1) else "NO"
    return None


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_output(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import ROOT
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "OPENAI_API_KEY": "sk-test-loopback"}

    def run(server, workdir, die_after):
        return subprocess.run([sys.executable, "-m", "helpers.bt_worker", server.base_url, str(workdir), str(die_after)],
                              env=env, cwd=ROOT / "tests", capture_output=True, text=True, timeout=600)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with FakeLLMServer(responder=deterministic_script) as server:
        killed = run(server, tmp_path / "a", 25)
        assert killed.returncode == -9, killed.stderr[-2000:]
        resumed = run(server, tmp_path / "a", 0)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        repeated = [k for k, n in server.answered.items() if n > 1]
        requests_a = server.requests
    with FakeLLMServer(responder=deterministic_script) as server_b:
        straight = run(server_b, tmp_path / "b", 0)
        assert straight.returncode == 0, straight.stderr[-2000:]
    assert (tmp_path / "a" / "rows.jsonl").read_bytes() == (tmp_path / "b" / "rows.jsonl").read_bytes()
    assert (tmp_path / "a" / "rejected.jsonl").read_bytes() == (tmp_path / "b" / "rejected.jsonl").read_bytes()
    assert repeated == [] and requests_a == server_b.requests  # the resumed run asked nothing twice
    rows, rejected, steps = map(int, straight.stdout.split())
    resumed_steps = int(resumed.stdout.split()[2])
    print(f"\nkilled after 25 paid answers, resumed: {rows} rows, {rejected} rejected, identical to an "
          f"uninterrupted run; {requests_a} requests in both; the resumed run re-ran {resumed_steps} of {steps} steps")
    assert rows > 10 and rejected > 0
    assert resumed_steps < steps  # finished items came from the checkpoints, not from running again


def test_plan_uses_the_attrition_measured_in_an_earlier_run(tmp_path, monkeypatch):
    from synth.lanes.backtranslate import attrition, plan_backtranslation
    from synth.llm.cost.tokens import count_text
    from synth.llm.cost.prices import PriceTable

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    decls = [d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
             if d.kind in ("fn", "method")]
    first, second = decls[::2], decls[1::2]
    with FakeLLMServer(responder=deterministic_script) as server:
        cache = ResponseCache(tmp_path / "c")
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 5.0), cache)
        models = {"w": ModelSettings(provider="openai", model="gpt-4o-mini", base_url=server.base_url + "/v1")}
        config = BacktranslateSettings(model="w")
        oracle = RustOracle(OracleSettings(jobs=2))
        earlier = run_backtranslation(first, client, oracle, config, models)
        measured = attrition(earlier.stats, len(first), len(earlier.rows))
        with_history = plan_backtranslation(second, config, models, PriceTable(), cache, count_text, measured)
        without = plan_backtranslation(second, config, models, PriceTable(), cache, count_text)
        before = client.ledger.totals().settled_usd
        later = run_backtranslation(second, client, oracle, config, models)
        spent = client.ledger.totals().settled_usd - before
    error = abs(with_history["expected_cost_usd"] - spent) / spent
    print(f"\nplan with measured attrition {measured}: ${with_history['expected_cost_usd']:.6f}, "
          f"{with_history['expected_rows']} rows; default attrition: ${without['expected_cost_usd']:.6f}; "
          f"actual ${spent:.6f}, {len(later.rows)} rows; error {error:.1%}")
    assert with_history["attrition"] == "measured" and measured["judge"] < 1.0
    assert error <= 0.25
    assert abs(with_history["expected_cost_usd"] - spent) < abs(without["expected_cost_usd"] - spent)
    assert abs(with_history["expected_rows"] - len(later.rows)) <= 0.25 * len(second)
