"""Self-repair rows (`[lanes.rft] self_repair`): a sample real rustc rejects goes back to the same
model, through the openai SDK to a loopback server, with rustc's errors; a try that passes the
judge is its fix, a row of task `selfrepair` whose fix a fresh compiler accepts and whose broken
attempt it rejects, with the model that made the mistake; where no try passes, the verified
reference is the fix only when asked for, and labelled so."""
import pytest
from conftest import EXAMPLE_CRATE
from benchmarks.fixtures.llm_server import FakeLLMServer

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate
from synth.doctasks.documented import doc_lane
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.generation.rft import ApiSampler, run_rft
from synth.generation.settings import RftSettings
from synth.lanes.rft import selfrepair_row
from synth.llm.client import LLMClient
from synth.llm.cost.ledger import Ledger
from synth.llm.models import ModelSettings
from synth.llm.response_cache import ResponseCache
from synth.rows.row import Row
from synth.tasks.judge import Judge
from synth.tasks.split import task_of

NAMES = ("gcd", "lcm")


@pytest.fixture(scope="module")
def made():
    decls = {d.name: d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations if d.kind == "fn"}
    rows, _ = doc_lane([decls[name] for name in NAMES], RustOracle(OracleSettings(jobs=2)))
    origins = {row.must_define[0]: row.model_dump(mode="json") for row in rows}
    return {name: (task_of(origins[name]), origins[name]) for name in NAMES}


def broken(reference: str) -> str:
    """The reference with the call in its last line misspelled: an unknown name (E0425)."""
    head, _, call = reference.rstrip("\n}").rpartition("gcd(")
    return f"{head}gcdd({call}" + reference[len(reference.rstrip("\n}")):]


def sample(made, tmp_path, settings: RftSettings, fixes: set[str]):
    """Every first answer broken; on rustc's errors, the tasks named in `fixes` get their reference."""
    seen = []

    def respond(body):
        prompt = body["messages"][-1]["content"]
        seen.append(prompt)
        if "The compiler says:" in prompt:  # the attempt it shows says which task it is
            name = next(n for n in NAMES if broken(made[n][0].reference).strip("\n") in prompt)
            reference = made[name][0].reference
            return f"```rust\n{reference if name in fixes else broken(reference)}\n```"
        name = next(n for n in NAMES if f"function `{n}`" in prompt)
        return f"```rust\n{broken(made[name][0].reference)}\n```"

    with FakeLLMServer(responder=respond) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        sampler = ApiSampler(client, ModelSettings(provider="openai", model="gpt-4o-mini", free=True,
                                                   base_url=server.base_url + "/v1"))
        result = run_rft([made[n][0] for n in NAMES], sampler, Judge({"rust": RustOracle(OracleSettings(jobs=2))}),
                         settings)
    return result, seen


def test_a_rejected_sample_fixed_by_the_model_is_a_verified_selfrepair_row(made, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    result, seen = sample(made, tmp_path, RftSettings(k=2, self_repair=2, self_repair_per_task=2), fixes={"gcd"})
    by_name = {n: s for n, s in zip(NAMES, result.sampled)}
    assert [len(s.repairs) for s in result.sampled] == [1, 1]  # the 2 identical attempts of a task: one sent back
    assert [r.fix for r in by_name["gcd"].repairs] == ["model"] and [r.fix for r in by_name["lcm"].repairs] == [""]
    feedback = [p for p in seen if "The compiler says:" in p]
    assert len(feedback) == 2 and all("error[E0425]" in p for p in feedback)
    figures = result.figures(2)[0]
    assert (figures["sent_back"], figures["fixed_by_model"], figures["fixed_by_reference"]) == (1, 1, 0)
    gcd, origin = made["gcd"]
    row = Row(**selfrepair_row(by_name["gcd"], by_name["gcd"].repairs[0], origin, "gpt-4o-mini", seed=0))
    assert row.task == "selfrepair" and row.made_by == "gpt-4o-mini" and row.origin == "model" and row.fix == "model"
    assert row.response == gcd.reference.strip("\n") and row.broken == broken(gcd.reference).strip("\n")
    assert "error[E0425]" in row.prompt and row.provenance.stage == "selfrepair" and row.verification.passed
    assert 0.5 < row.similarity < 1.0  # one line of the attempt changed
    fresh = RustOracle(OracleSettings(jobs=1))
    assert fresh.check_solo(Candidate.of(row.checked_source)).passed
    assert not fresh.check_solo(Candidate.of(row.checked_broken_source)).passed


def test_the_reference_is_the_fix_only_when_asked_and_labelled(made, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    result, _ = sample(made, tmp_path, RftSettings(k=1, self_repair=1, reference_fixes=True), fixes=set())
    assert [r.fix for s in result.sampled for r in s.repairs] == ["reference", "reference"]
    lcm, origin = made["lcm"]
    row = Row(**selfrepair_row(result.sampled[1], result.sampled[1].repairs[0], origin, "m", seed=0))
    assert row.fix == "reference" and row.response == lcm.reference.strip("\n")
    off, _ = sample(made, tmp_path / "off", RftSettings(k=1), fixes={"gcd", "lcm"})
    assert all(not s.repairs for s in off.sampled)  # self_repair = 0: nothing is sent back
