"""One shape for a lane, a provider and an oracle: a new one is a module plus one registry line,
and `synth plan`, `run` and `refresh` pick it up with no other edit. Plus the bugs the old
shape had: an operator hidden by a stale fingerprint, a plan that disagreed with the run on
what is free, and a plan that priced stored work again."""
import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_CRATE, ROOT
from benchmarks.fixtures.llm_server import FakeLLMServer
from helpers.toy_lane import EchoLane
from helpers.toy_provider import LoopbackProvider

from benchmarks.shape import shape
from synth.cli.main import main
from synth.extract.extract import extract_paths
from synth.lanes import LANES, register
from synth.rows.rowfile import read_rows
from synth.llm import providers

CONFIG = """
[run]
out = "run"
cache_dir = "cache"

[[sources]]
path = "crate"
lang = "rust"

[budget]
max_spend_usd = 0

{models}

[lanes.repair]
enabled = {repair}

{stages}
"""


def _workspace(tmp: Path, models: str = "", stages: str = "", repair: str = "false") -> Path:
    shutil.copytree(EXAMPLE_CRATE, tmp / "crate", ignore=shutil.ignore_patterns("target"))
    config = tmp / "synth.toml"
    config.write_text(CONFIG.format(models=models, stages=stages, repair=repair))
    return config


def _synth(capsys, *argv) -> dict:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code in (0, 1), out
    return json.loads(out[-1])


@pytest.fixture()
def echo_lane():
    lane = register(EchoLane())  # the one registry line
    yield lane
    LANES.pop(lane.name)


def test_a_new_lane_is_one_module_and_one_register_line(tmp_path, capsys, echo_lane):
    config = _workspace(tmp_path, stages="[lanes.echo]\nenabled = true\nprefix = \"Summarize\"\n")
    functions = [d for d in extract_paths([tmp_path / "crate"]).declarations if d.kind == "fn"]
    documented = [d for d in functions if len(d.doc) >= 40]
    assert 0 < len(documented) < len(functions)
    plan = _synth(capsys, "plan", "--config", str(config))
    assert {r["stage"]: r["items"] for r in plan["stages"]}["echo"] == len(functions)
    run = _synth(capsys, "run", "--config", str(config))
    assert run["stages"]["echo"]["processed"] == len(functions)
    rows = read_rows(tmp_path / "run" / "rows" / "summary.jsonl.zst")
    assert len(rows) == len(documented)
    rejected = (tmp_path / "run" / "rejected" / "echo.jsonl").read_text().splitlines()
    assert len(rejected) == len(functions) - len(documented)
    assert "rust_summary" in json.loads((tmp_path / "run" / "manifest.json").read_text())["by_lane"]
    again = _synth(capsys, "refresh", "--config", str(config))
    assert again["stages"]["echo"]["reused"] == len(functions) and again["stages"]["echo"]["processed"] == 0
    assert _synth(capsys, "plan", "--config", str(config))["total"]["items"] == 0
    # Its settings are its fingerprint: a changed prefix re-runs every item.
    config.write_text(config.read_text().replace('prefix = "Summarize"', 'prefix = "Describe"'))
    changed = _synth(capsys, "refresh", "--config", str(config))
    assert changed["stages"]["echo"]["processed"] == len(functions)
    # Its keys are checked like everyone's.
    config.write_text(config.read_text().replace("prefix =", "prefx ="))
    assert main(["plan", "--config", str(config)]) == 2
    assert "unknown key 'lanes.echo.prefx' (did you mean 'prefix'?)" in capsys.readouterr().err


def test_a_new_provider_is_one_module_and_one_register_line(tmp_path, capsys, monkeypatch):
    toy = LoopbackProvider()
    providers.register(toy)  # the one registry line
    monkeypatch.setenv(toy.key_env, "loopback-key")
    try:
        with FakeLLMServer() as server:
            models = (f'[models.local]\nprovider = "loopback"\nmodel = "loopback-mini"\n'
                      f'base_url = "{server.base_url}/v1"\nfree = true\n')
            stages = f'[lanes.toolcalls]\nenabled = true\nmodel = "local"\ntools = "{ROOT}/examples/mcp/tools.json"\n'
            config = _workspace(tmp_path, models=models, stages=stages)
            plan = _synth(capsys, "plan", "--config", str(config))  # a free model runs under a $0 cap
            assert [r["stage"] for r in plan["stages"]] == ["toolcalls"] and plan["stages"][0]["calls"] > 0
            assert server.requests == 0
            run = _synth(capsys, "run", "--config", str(config))
            assert run["stages"]["toolcalls"]["processed"] > 0 and server.requests > 0
            sent = server.requests
            again = _synth(capsys, "refresh", "--config", str(config))
            assert again["stages"]["toolcalls"]["reused"] > 0 and server.requests == sent
    finally:
        providers.unregister(toy.name)
    assert main(["plan", "--config", str(config)]) == 2  # unregistered: an error, not another provider
    assert "unknown LLM provider 'loopback'" in capsys.readouterr().err


def test_a_new_mutation_operator_is_not_hidden_by_stored_results(tmp_path, capsys, monkeypatch):
    from synth.mutate import repair
    from synth.mutate.operator import Operator

    config = _workspace(tmp_path, repair="true")
    first = _synth(capsys, "run", "--config", str(config))
    eligible = first["stages"]["repair"]["items"]
    assert _synth(capsys, "plan", "--config", str(config))["total"]["items"] == 0
    operators, sites, apply = repair.LANGS["rust"]
    new = Operator("drop_everything", "E0308", lambda root, source: [])
    monkeypatch.setitem(repair.LANGS, "rust", ([*operators, new], sites, apply))
    plan = _synth(capsys, "plan", "--config", str(config))
    assert {r["stage"]: r["items"] for r in plan["stages"]}["repair"] == eligible


def test_the_plan_and_the_run_agree_on_what_is_free(tmp_path, capsys):
    # A free writer with a paid judge is not free: under a $0 cap neither the run nor the plan runs it.
    models = ('[models.local]\nprovider = "openai"\nmodel = "local-model"\nbase_url = "http://127.0.0.1:9/v1"\n'
              'free = true\n\n[models.judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n')
    stages = '[lanes.backtranslate]\nenabled = true\nmodel = "local"\njudge = "judge"\n'
    config = _workspace(tmp_path, models=models, stages=stages)
    plan = _synth(capsys, "plan", "--config", str(config))
    run = _synth(capsys, "run", "--config", str(config))
    assert "backtranslate" in run["skipped"] and "backtranslate" not in run["stages"]
    assert "backtranslate" in plan["skipped"] and all(r["stage"] != "backtranslate" for r in plan["stages"])
    assert plan["skipped"]["backtranslate"] == run["skipped"]["backtranslate"]


def test_the_import_structure_has_no_cycle_and_is_shallow():
    figures = shape()
    assert figures["cycles"] == []
    assert figures["runtime_imports_of_benchmarks_or_tests"] == []
    # SynthError's module (oracles/errors.py) is one more link under every module that raises
    assert figures["longest_chain_above_error_root"] <= 7 and figures["longest_chain"] <= 8, figures["chain"]
    assert figures["over_max_lines"] == {}
    assert figures["crowded_folders"] == {}
