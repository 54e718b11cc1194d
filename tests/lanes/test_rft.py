"""Rejection sampling: API samples through the scripted loopback server, and a local transformers
model built in the test (no hub): its completions will not compile, and the stage says so. Tasks
are the doc lane's, judged as `synth eval` judges answers."""
import re

import pytest
from conftest import EXAMPLE_CRATE
from benchmarks.fixtures.llm_server import FakeLLMServer

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate
from synth.tasks.split import task_of
from synth.tasks.completion import answer_code
from synth.doctasks.documented import doc_lane
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.generation.settings import RftSettings
from synth.generation.rft import ApiSampler, PolicySampler, pairs, run_rft
from synth.tasks.judge import Judge
from synth.llm.client import LLMClient
from synth.llm.cost.ledger import Ledger
from synth.llm.models import ModelSettings
from synth.llm.response_cache import ResponseCache
from synth.tasks.task import CrateSpot

NAMES = ("gcd", "lcm", "is_prime")


@pytest.fixture(scope="module")
def decls():
    return {d.name: d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations if d.kind == "fn"}


@pytest.fixture(scope="module")
def tasks(decls):
    rows, _ = doc_lane([decls[name] for name in NAMES], RustOracle(OracleSettings(jobs=2)))
    by_name = {row.must_define[0]: task_of(row.model_dump(mode="json")) for row in rows}
    return [by_name[name] for name in NAMES]


def judge():
    return Judge({"rust": RustOracle(OracleSettings(jobs=2))})


def name_of(prompt: str) -> str:
    return re.search(r"function `(\w+)`", prompt).group(1)


def test_rft_keeps_passing_samples_and_pairs_them(tasks, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")

    def respond(body):  # n samples share one reply text; the server appends " #i" to samples 1..n-1
        task = next(t for t in tasks if name_of(t.prompt) == name_of(body["messages"][-1]["content"]))
        if name_of(task.prompt) == "gcd":  # fenced: " #i" lands after the fence, all 4 samples are the same good code
            return f"```rust\n{task.reference}\n```"
        if name_of(task.prompt) == "lcm":  # bare: " #i" lands in the code, so only sample 0 compiles
            return task.reference
        return "```rust\nnot rust at all\n```"

    with FakeLLMServer(responder=respond) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        sampler = ApiSampler(client, ModelSettings(provider="openai", model="gpt-4o-mini",
                                                   base_url=server.base_url + "/v1"))
        result = run_rft(tasks, sampler, judge(), RftSettings(k=4, cap_per_task=2))
        assert server.requests == 3  # one request per task: k samples through `n`
    figures = {name_of(t.prompt): f for t, f in zip(tasks, result.figures(4))}
    assert [figures[n]["passed"] for n in NAMES] == [4, 1, 0]
    assert [figures[n]["kept"] for n in NAMES] == [1, 1, 0]  # 4 identical -> 1
    assert figures["lcm"]["pass@1"] == 0.25 and figures["lcm"]["pass@4"] == 1.0 and figures["is_prime"]["pass@4"] == 0
    made = [p for s in result.sampled for p in pairs(s)]
    assert len(made) == 1 and made[0]["chosen"] != made[0]["rejected"]  # lcm only
    assert made[0]["rejected_verdict"]["compiled"] is False and made[0]["rejected_verdict"]["first_error"]
    fresh = RustOracle(OracleSettings(jobs=1))
    kept = [(s.task, s.completions[i]) for s in result.sampled for i in s.kept]
    assert kept and all(fresh.check_solo(Candidate.of(t.source(answer_code(c)))).passed for t, c in kept)


def test_one_sample_requests_for_servers_without_n(tasks, tmp_path, monkeypatch):
    """`transformers serve` refuses `n`: with multi_sample = false each sample is its own request,
    with its own seed (and its own cache entry)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    seen = []

    def respond(body):
        seen.append((body.get("n", 1), body.get("seed")))
        return f"```rust\n{tasks[0].reference}\n```"

    with FakeLLMServer(responder=respond) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        spec = ModelSettings(provider="openai", model="m", base_url=server.base_url + "/v1", free=True, multi_sample=False)
        result = run_rft(tasks[:1], ApiSampler(client, spec, seed=7), judge(), RftSettings(k=3))
    assert sorted(seen) == [(1, 7), (1, 8), (1, 9)] and result.figures(3)[0]["passed"] == 3


def test_rft_from_a_local_policy_keeps_nothing_and_says_so(tasks, tmp_path):
    from benchmarks.fixtures.tiny_model import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny", [t.prompt + t.reference for t in tasks] * 4)
    spec = ModelSettings(provider="local", model=str(model), max_tokens=24)
    result = run_rft(tasks, PolicySampler(spec, seed=1), judge(), RftSettings(k=3))
    assert all(f["samples"] == 3 and f["passed"] == 0 for f in result.figures(3))
    assert result.message().startswith("rft: 0 samples kept from 3 tasks; 0/9 samples passed")
    again = run_rft(tasks, PolicySampler(spec, seed=1), judge(), RftSettings(k=3))
    assert [s.completions for s in again.sampled] == [s.completions for s in result.sampled]  # seeded


def test_rft_runs_the_crate_tests_on_passing_samples(tasks, decls, tmp_path, monkeypatch):
    """A sample that compiles but is wrong (gcd returning a + b) fails the crate's tests: not kept."""
    from oracles.cargo.oracle import CargoOracle

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    gcd, decl = tasks[0], decls["gcd"]
    wrong = gcd.reference.replace("gcd(b, a % b)", "a + b")
    spot = CrateSpot(root=decl.crate_root, path=decl.crate_path, start_byte=decl.start_byte, end_byte=decl.end_byte)
    with FakeLLMServer(responder=lambda body: f"```rust\n{wrong}\n```") as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        sampler = ApiSampler(client, ModelSettings(provider="openai", model="gpt-4o-mini",
                                                   base_url=server.base_url + "/v1"))
        compiled_only = run_rft([gcd], sampler, judge(), RftSettings(k=2))
        with_tests = judge()
        with_tests.crate_tests = CargoOracle()
        tested = run_rft([gcd.model_copy(update={"crate_spot": spot})], sampler, with_tests, RftSettings(k=2))
    assert compiled_only.sampled[0].kept  # it compiles...
    assert not tested.sampled[0].kept and with_tests.tested == 1  # ...but the crate's tests reject it (one run: same code)


def test_an_empty_or_unrelated_completion_is_not_a_pass(tasks):
    """Next to its context an empty answer compiles; it must still not count."""
    class Empty:
        name = "empty"

        def complete(self, prompts, k):
            return [["", "pub fn something_else() {}"][:k] for _ in prompts]

    result = run_rft(tasks[:2], Empty(), judge(), RftSettings(k=2))
    assert all(not s.kept and not any(s.passed) for s in result.sampled)


def test_a_method_checked_inside_its_impl_is_a_task_placed_there():
    """A back-translated method is verified inside its impl block: its task places answers there
    (a task that appended them after the context would fail its own reference)."""
    context = "pub struct Point {\n    pub x: f64,\n}\n"
    method = "pub fn double(&self) -> f64 {\n        self.x * 2.0\n    }"
    checked = f"{context}\nimpl Point {{\n{method}\n}}\n"
    row = {"id": "r1", "lang": "rust", "task": "codegen", "prompt": "Write `Point::double`.", "context": context,
           "response": method, "checked_source": checked, "must_define": ["double"],
           "verification": {"scope": "standalone"}}
    task = task_of(row)
    assert task is not None and task.source(method) == checked
    assert task_of({**row, "checked_source": checked.replace(method, "pub fn other() {}")}) is None
    outcomes = judge().judge([task, task], [f"```rust\n{method}\n```", "```rust\npub fn double(&self) -> f64 { self.y }\n```"])
    assert outcomes[0].solved and not outcomes[1].solved


def test_the_rft_lane_judges_with_the_crates_tests_where_its_settings_say(tmp_path, monkeypatch):
    """`[lanes.rft] crate_tests`: the doc lane's task says where its function sits in its crate, and
    a sampled body that compiles but computes another value (`n.0 + 2` for `n.0 * 2`) is no row;
    off, it is one (what rustc alone accepts: a `Wrapping` is no plain value, so the task has no
    same-value tests). A function of plain values gets those: `n + 2` for `n * 2` is no row either way."""
    from synth.lanes import LANES
    from synth.pipeline.run import run_pipeline
    from synth.rows.rowfile import read_rows
    from synth.settings.config import load_config

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    (tmp_path / "twice" / "src").mkdir(parents=True)
    (tmp_path / "twice" / "Cargo.toml").write_text('[package]\nname = "twice"\nversion = "0.1.0"\nedition = "2021"\n')
    def crate(param: str, value: str, of=lambda n: f"std::num::Wrapping({n})") -> None:
        (tmp_path / "twice" / "src" / "lib.rs").write_text(
            f"/// Twice the value.\npub fn double(n: {param}) -> u64 {{\n    {value} * 2\n}}\n\n#[cfg(test)]\nmod tests {{\n"
            f"    #[test]\n    fn four() {{\n        assert_eq!(super::double({of(2)}), 4);\n"
            f"        assert_eq!(super::double({of(3)}), 6);\n    }}\n}}\n")

    wrapped = "std::num::Wrapping<u64>"
    crate(wrapped, "n.0")
    kept = {}
    answer = {"n.0": f"```rust\npub fn double(n: {wrapped}) -> u64 {{\n    n.0 + 2\n}}\n```"}
    with FakeLLMServer(responder=lambda body: answer["n.0"]) as server:
        for on in (True, False, "plain"):
            if on == "plain":
                crate("u64", "n", str)
                answer["n.0"] = "```rust\npub fn double(n: u64) -> u64 {\n    n + 2\n}\n```"
            config = tmp_path / f"synth-{on}.toml"
            config.write_text(
                f'[run]\nout = "run-{on}"\ncache_dir = "cache-{on}"\n\n[[sources]]\npath = "twice"\nlang = "rust"\n\n'
                f'[budget]\nmax_spend_usd = 1.0\n\n[models.writer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
                f'base_url = "{server.base_url}/v1"\n\n[lanes.doclane]\nenabled = true\n\n'
                f'[lanes.rft]\nenabled = true\nmodel = "writer"\nk = 1\nfamilies = ["codegen"]\n'
                f'crate_tests = {str(on is True).lower()}\n\n[tasks]\nenabled = false  # no crate held out: the one crate is sampled\n')
            summary = run_pipeline(load_config(config, LANES))
            assert summary.lanes["rft"]["items"] == 1, summary.lanes
            path = tmp_path / f"run-{on}" / "rows" / "rft.jsonl.zst"
            kept[on] = read_rows(path) if path.exists() else []
    assert kept[True] == [] and len(kept[False]) == 1 and "n.0 + 2" in kept[False][0]["response"]
    assert kept["plain"] == []  # without crate tests: the reference's values tell
