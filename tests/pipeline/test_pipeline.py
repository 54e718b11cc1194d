"""The front door: synth.toml validation, `synth plan`, spend-gated `synth run`, `synth refresh`
(incremental, locked, resumable, diffed) against the real openai SDK on a loopback provider, the
real Rust oracle and the real MCP tool list."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import EXAMPLE_CRATE, ROOT
from benchmarks.fixtures.llm_server import FakeLLMServer

from benchmarks.fixtures.scripted_llm import stage_responder
from synth.cli.main import main
from synth.settings.config import ConfigError, load_config
from synth.lanes import LANES
from synth.extract import extract_paths
from synth.rows.rowfile import read_rows

CONFIG = """
[run]
out = "run"
cache_dir = "cache"
seed = 0

[[sources]]
path = "crate"
lang = "rust"

[budget]
max_spend_usd = {cap}

[models.writer]
provider = "openai"
model = "gpt-4o-mini"
base_url = "{base_url}"

[lanes.repair]
enabled = true

[lanes.backtranslate]
enabled = true
model = "writer"
limit = {limit}
workers = 2

[lanes.rft]
enabled = true
model = "writer"
k = 2
families = ["codegen"]  # the back-translated instructions (the repair tasks are test_rft's)

[lanes.toolcalls]
enabled = true
model = "writer"
tools = "tools.json"
server = ["{python}", "{server}"]
per_tool = 1
k = 4

[assemble]
val_share = 0.1
"""


def _workspace(tmp: Path, base_url: str, cap: float = 1.0, limit: int = 6) -> Path:
    shutil.copytree(EXAMPLE_CRATE, tmp / "crate", ignore=shutil.ignore_patterns("target"))
    shutil.copy(ROOT / "examples" / "mcp" / "tools.json", tmp / "tools.json")
    config = tmp / "synth.toml"
    config.write_text(CONFIG.format(cap=cap, base_url=base_url, limit=limit, python=sys.executable,
                                    server=ROOT / "examples" / "mcp" / "server.py"))
    return config


@pytest.fixture()
def provider(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    with FakeLLMServer(responder=stage_responder(extract_paths([EXAMPLE_CRATE]).declarations)) as server:
        yield server


def _run(argv, capsys) -> tuple[int, dict]:
    code = main(argv + ["--json"])
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


def test_config_errors_name_the_key_and_suggest(tmp_path):
    config = _workspace(tmp_path, "http://127.0.0.1:9/v1")
    text = config.read_text()
    config.write_text(text.replace("[lanes.rft]", "[lanes.rtf]"))
    with pytest.raises(ConfigError, match=r"unknown key 'lanes.rtf' \(did you mean 'rft'\?\)"):
        load_config(config, LANES)
    config.write_text(text.replace("max_spend_usd", "max_spend"))
    with pytest.raises(ConfigError, match=r"unknown key 'budget.max_spend' \(did you mean 'max_spend_usd'\?\)"):
        load_config(config, LANES)
    config.write_text(text.replace('[lanes.rft]\nenabled = true\nmodel = "writer"', '[lanes.rft]\nenabled = true\nmodel = "writr"'))
    with pytest.raises(ConfigError, match=r"lanes.rft uses model 'writr'.*did you mean 'writer'"):
        load_config(config, LANES)
    config.write_text(text.replace('path = "crate"', 'path = "nowhere"'))
    with pytest.raises(ConfigError, match="nowhere does not exist"):
        load_config(config, LANES)
    assert main(["run", "--config", str(config)]) == 2


def test_without_a_cap_only_free_stages_run(tmp_path, provider, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1", cap=0)
    code, summary = _run(["run", "--config", str(config)], capsys)
    assert code == 0 and provider.requests == 0 and summary["spent_usd"] == 0
    assert set(summary["stages"]) == {"repair"}
    assert all("cap is $0" in summary["skipped"][s] for s in ("backtranslate", "rft", "toolcalls"))
    run = tmp_path / "run"
    assert (run / "rows" / "repair.jsonl.zst").exists() and (run / "train.jsonl.zst").exists()
    assert summary["paths"]["rows"] == [str(run / "rows" / "repair.jsonl.zst")]
    assert summary["paths"]["train"] == str(run / "train.jsonl.zst")
    assert (run / "manifest.json").exists() and (run / "snapshots" / "0001" / "diff.json").exists()


@pytest.mark.slow
def test_plan_lists_every_enabled_stage_and_the_total_is_the_sum(tmp_path, provider, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1")
    code, plan = _run(["plan", "--config", str(config)], capsys)
    assert code == 0 and provider.requests == 0  # a plan makes no call
    assert [r["stage"] for r in plan["stages"]] == ["repair", "backtranslate", "rft", "toolcalls"]
    for key, total in plan["total"].items():
        assert total == pytest.approx(sum(r[key] for r in plan["stages"]), abs=1e-6), key
    by = {r["stage"]: r for r in plan["stages"]}
    assert by["backtranslate"]["items"] == 6 and by["backtranslate"]["expected_cost_usd"] > 0
    assert by["toolcalls"]["calls"] == 8 and by["repair"]["compiler_candidates"] > 0
    assert plan["total"]["worst_case_usd"] >= plan["total"]["expected_cost_usd"] > 0
    seconds = plan["seconds"]  # the run's wall: its start, the lanes (their compiling and sampling), the writing
    assert seconds["lanes"] == pytest.approx(plan["total"]["compiler_s"] + plan["total"]["sampling_s"], abs=0.1)
    assert seconds["total"] == pytest.approx(seconds["setup"] + seconds["lanes"] + seconds["write"], abs=0.2)
    assert seconds["lanes"] > 0
    # After a run, the same plan has nothing left to do and uses the measured attrition.
    assert main(["run", "--config", str(config), "--json"]) == 0
    capsys.readouterr()
    _, again = _run(["plan", "--config", str(config)], capsys)
    assert again["total"]["items"] == 0 and again["total"]["calls"] == 0
    assert {r["attrition"] for r in again["stages"]} == {"measured"}
    # Self-repair on: every task again; its samples are cached, its worst case is one more call a task.
    config.write_text(config.read_text().replace("k = 2\nfamilies", "k = 2\nself_repair = 3\nfamilies"))
    _, repairing = _run(["plan", "--config", str(config)], capsys)
    rft = {r["stage"]: r for r in repairing["stages"]}["rft"]
    assert rft["items"] > 0 and rft["calls"] == rft["cache_hits"] == rft["items"] and rft["worst_case_usd"] > 0


@pytest.mark.slow
def test_refresh_pays_only_for_what_changed(tmp_path, provider, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1")
    code, cold = _run(["refresh", "--config", str(config)], capsys)
    assert code == 0, cold["attention"]
    assert cold["llm_calls"] > 0 and cold["candidates_compiled"] > 0 and cold["diff"]["total"]["added"] > 0
    assert cold["spent_usd"] > 0 and all(s["undone"] == 0 for s in cold["stages"].values())
    tool_rows = [row for name in ("tool_selection", "argument_generation")
                 for row in read_rows(tmp_path / "run" / "rows" / f"{name}.jsonl.zst")]
    assert any("ran without error on the live server" in json.dumps(r) for r in tool_rows)

    rejected = {p.name: p.read_bytes() for p in (tmp_path / "run" / "rejected").glob("*.jsonl")}
    _rejections_have_kinds(tmp_path / "run")

    code, same = _run(["refresh", "--config", str(config)], capsys)
    assert code == 0
    # every item's rejections came back from the item store: the same kinds, the same bytes
    assert {p.name: p.read_bytes() for p in (tmp_path / "run" / "rejected").glob("*.jsonl")} == rejected
    assert same["llm_calls"] == 0 and same["compiler_runs"] == 0 and same["candidates_compiled"] == 0
    assert same["diff"]["total"] == {"added": 0, "removed": 0, "changed": 0}
    assert all(s["processed"] == 0 for s in same["stages"].values())
    run = tmp_path / "run"
    assert (run / "snapshots" / "0001" / "train.jsonl.zst").read_bytes() == (run / "snapshots" / "0002" / "train.jsonl.zst").read_bytes()

    stats = tmp_path / "crate" / "src" / "stats.rs"
    assert "gcd(b, a % b)" in stats.read_text()
    stats.write_text(stats.read_text().replace("gcd(b, a % b)", "gcd(b, a.rem_euclid(b))"))
    code, changed = _run(["refresh", "--config", str(config)], capsys)
    assert code == 0
    processed = {name: s["processed"] for name, s in changed["stages"].items()}
    assert processed["repair"] == 1 and processed["toolcalls"] == 0
    assert processed["backtranslate"] <= 1 and processed["rft"] <= 1
    assert 0 < changed["candidates_compiled"] <= 0.1 * cold["candidates_compiled"]
    assert changed["llm_calls"] <= 4  # at most one declaration's instruction, regeneration, judge and samples
    assert changed["diff"]["total"]["changed"] > 0  # the edited function's rows changed, not added
    print(f"\ncold: {cold['llm_calls']} LLM calls, {cold['candidates_compiled']} candidates compiled; "
          f"nothing changed: {same['llm_calls']} / {same['compiler_runs']} compiler runs; one function changed: "
          f"{changed['llm_calls']} calls, {changed['candidates_compiled']} candidates, diff {changed['diff']['total']}")


def _rejections_have_kinds(run: Path) -> None:
    """Every rejection a lane wrote says its kind, and the run's funnel counts those kinds."""
    from collections import Counter
    from synth.rows.rejection import Rejection
    counted = json.loads((run / "stats" / "run.json").read_text())["rejections"]
    files = sorted((run / "rejected").glob("*.jsonl"))
    assert {p.stem for p in files} >= {"repair", "toolcalls"}
    for path in files:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(line["kind"] and line["reason"] for line in lines), path
        assert all(Rejection.from_json(line).to_json() == line for line in lines)
        assert counted[path.stem] == dict(Counter(line["kind"] for line in lines)), path.stem
    assert "equivalent mutant" in counted["repair"]  # the kinds are the checks', not the reasons' text


def _refresh_process(config: Path) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-loopback"}
    return subprocess.Popen([str(Path(sys.executable).parent / "synth"), "refresh", "--config", str(config), "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout=120.0):
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise TimeoutError
        time.sleep(0.05)


@pytest.mark.slow
def test_two_refreshes_never_overlap(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    scripted = stage_responder(extract_paths([EXAMPLE_CRATE]).declarations)
    gate = threading.Event()  # the first refresh's calls wait here until the second one has been refused

    def responder(body):
        gate.wait(timeout=300)
        return scripted(body)
    with FakeLLMServer(responder=responder) as server:
        config = _workspace(tmp_path, server.base_url + "/v1")
        first = _refresh_process(config)
        _wait_for(lambda: server.requests > 0)  # the first one holds the lock and is paying for calls
        second = _refresh_process(config)
        out, err = second.communicate(timeout=120)
        gate.set()
        assert second.returncode == 3 and "is in use by pid" in err and "nothing was done" in err
        out, err = first.communicate(timeout=300)
        assert first.returncode == 0, err[-2000:]


@pytest.mark.slow
def test_a_killed_refresh_resumes_to_the_same_snapshot(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    responder = stage_responder(extract_paths([EXAMPLE_CRATE]).declarations)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with FakeLLMServer(responder=responder, latency_s=(0.05, 0.05)) as server:
        config = _workspace(tmp_path / "a", server.base_url + "/v1")
        victim = _refresh_process(config)
        _wait_for(lambda: server.requests >= 8)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        assert not (tmp_path / "a" / "run" / "snapshots" / "0001").exists()  # it died before its snapshot
        resumed = _refresh_process(config)
        out, err = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, err[-2000:]
        repeated = [k for k, n in server.answered.items() if n > 1]
    with FakeLLMServer(responder=responder) as server_b:
        straight = _refresh_process(_workspace(tmp_path / "b", server_b.base_url + "/v1"))
        out_b, err_b = straight.communicate(timeout=300)
        assert straight.returncode == 0, err_b[-2000:]
    a, b = tmp_path / "a" / "run", tmp_path / "b" / "run"
    for name in ("train.jsonl.zst", "val.jsonl.zst", "rows/repair.jsonl.zst", "rows/codegen.jsonl.zst", "rows/rft.jsonl.zst"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # Only what was in flight when the process died (2 workers) was asked again: its answer never
    # reached the cache. Everything answered before is reused from the cache, not paid again.
    assert len(repeated) <= 2
    from synth.llm.cost.ledger import Ledger  # the dead run's open reservations were settled or marked lost
    assert all(Ledger(p, 0).totals().calls_open == 0 for p in (tmp_path / "a" / "run" / "ledgers").glob("*.sqlite"))


@pytest.mark.slow
def test_report_renders_in_headless_chromium_with_data_in_every_plot(tmp_path, provider, capsys):
    import re

    from benchmarks.fixtures.tiny_model import build_tiny_model
    from synth.prompting.templates import system_prompt

    config = _workspace(tmp_path, provider.base_url + "/v1", limit=4)
    assert main(["run", "--config", str(config), "--json"]) == 0
    capsys.readouterr()
    run = tmp_path / "run"
    texts = [system_prompt()] + [p.read_text() for p in sorted((tmp_path / "crate" / "src").glob("*.rs"))]
    model = build_tiny_model(tmp_path / "model", texts)
    assert main(["train", "sft", "--model", str(model), "--data", str(run), "--out", str(tmp_path / "sft"),
                 "--max-steps", "6", "--json"]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "--train", str(tmp_path / "sft")]) == 0
    page = (run / "report.html").read_text()
    points = [int(p) for p in re.findall(r'data-points="(\d+)"', page)]
    assert len(points) == 7 and all(p > 0 for p in points), points  # every plot has data
    assert "http://" not in page.replace(provider.base_url, "") and "<script" not in page  # self-contained
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed (make setup installs it)"
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    shot = artifacts / "report.png"
    shot.unlink(missing_ok=True)
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1300,2600", f"--screenshot={shot}", (run / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    from PIL import Image
    image = Image.open(shot).convert("L")
    assert image.size == (1300, 2600)
    histogram = image.histogram()
    assert sum(histogram[:200]) > 0.02 * image.size[0] * image.size[1]  # ink, not a blank page


@pytest.mark.slow
def test_refresh_bench_one_percent_changed_costs_at_most_one_and_a_half_percent():
    from benchmarks.refresh_bench import run_refresh_bench
    result = run_refresh_bench(n=100, changed_share=0.01)
    assert result["changed"] == 1 and result["unchanged_zero"]
    assert result["cold"]["llm_calls"] > 300 and result["cold"]["compiler_candidates"] >= 300
    assert 0 < result["ratio_llm_calls"] <= 0.015 and 0 < result["ratio_compiler_work"] <= 0.015
    assert result["changed_run"]["diff"]["changed"] > 0


@pytest.mark.slow
def test_a_toolchain_upgrade_reverifies_without_paying_again(tmp_path, provider, capsys, real_rustc):
    config = _workspace(tmp_path, provider.base_url + "/v1", limit=3)
    code, cold = _run(["refresh", "--config", str(config)], capsys)
    assert code == 0 and cold["llm_calls"] > 0
    upgraded = tmp_path / "rustc-upgraded"  # the same compiler, announcing another version
    upgraded.write_text(f'#!/bin/sh\nif [ "$1" = "-V" ]; then echo "rustc 1.96.0 (upgraded)"; exit 0; fi\n'
                        f'exec "{real_rustc}" "$@"\n')
    upgraded.chmod(0o755)
    config.write_text(config.read_text() + f'\n[oracles]\nrustc = "{upgraded}"\n')
    code, after = _run(["refresh", "--config", str(config)], capsys)
    assert code == 0
    assert after["llm_calls"] == 0  # every answer comes from the response cache
    assert after["candidates_compiled"] >= cold["candidates_compiled"] * 0.9  # every row is checked again
    assert after["stages"]["repair"]["processed"] == cold["stages"]["repair"]["processed"]
    rows = read_rows(tmp_path / "run" / "train.jsonl.zst")
    assert {r["verification"]["toolchain"] for r in rows if r["task"] != "tool_selection"
            and r["task"] != "argument_generation"} == {"rustc 1.96.0 (upgraded)"}
    assert after["diff"]["total"]["changed"] > 0 and after["diff"]["total"]["added"] == 0


@pytest.mark.slow
def test_batch_refreshes_converge_at_batch_prices(tmp_path, provider, capsys):
    """`--batch`: each refresh collects yesterday's batch answers, goes as far as they allow, and
    submits the next requests; RFT's multi-sample requests (n=k) are made online."""
    config = _workspace(tmp_path, provider.base_url + "/v1", limit=3)
    summaries = []
    for _ in range(6):
        code, summary = _run(["refresh", "--config", str(config), "--batch"], capsys)
        assert code == 0, summary["attention"]
        summaries.append(summary)
        if not summary["batch_submitted"]:
            break
    assert summaries[0]["batch_submitted"] > 0 and summaries[-1]["batch_submitted"] == 0 and len(summaries) >= 3
    assert provider.batches_created == sum(1 for s in summaries if s["batch_submitted"])
    final = summaries[-1]["stages"]
    assert final["backtranslate"]["rows"] == 3 and final["toolcalls"]["rows"] > 0 and final["rft"]["rows"] > 0
    online = sum(s["llm_calls"] for s in summaries)
    assert online == 3  # only the RFT requests (n=2 samples each) went online
    run = tmp_path / "run"
    from synth.llm.cost.ledger import Ledger
    settled = sum(Ledger(p, 0).totals().settled_usd for p in (run / "ledgers").glob("*.sqlite"))
    assert settled > 0 and all(Ledger(p, 0).totals().calls_open == 0 for p in (run / "ledgers").glob("*.sqlite"))


def test_a_missing_key_or_price_stops_before_anything_runs(tmp_path, provider, monkeypatch, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1")
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main(["run", "--config", str(config)]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    config.write_text(config.read_text().replace('model = "gpt-4o-mini"', 'model = "gpt-unpriced"'))
    assert main(["run", "--config", str(config)]) == 2
    assert "no price for model `gpt-unpriced`" in capsys.readouterr().err
    assert provider.requests == 0 and not (tmp_path / "run" / "rows").exists()


@pytest.mark.slow
def test_the_cap_stops_a_run_cleanly_and_a_higher_cap_finishes_it(tmp_path, provider, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1", limit=6)
    config.write_text(config.read_text().replace("workers = 2", "workers = 1"))  # where the cap falls: fixed
    code, capped = _run(["run", "--config", str(config), "--max-spend", "0.0008"], capsys)
    assert code == 1 and capped["spent_usd"] <= 0.0008  # the cap holds, committed worst cases included
    undone = sum(s["undone"] for s in capped["stages"].values())
    assert undone > 0 and any("left undone" in a for a in capped["attention"])
    paid_before = provider.requests
    code, finished = _run(["run", "--config", str(config), "--max-spend", "1"], capsys)
    assert code == 0 and all(s["undone"] == 0 for s in finished["stages"].values())
    assert finished["stages"]["backtranslate"]["reused"] > 0  # what the capped run finished is kept
    assert provider.requests - paid_before == finished["llm_calls"]  # only what was left was asked
    assert [k for k, n in provider.answered.items() if n > 1] == []  # nothing paid twice


def test_vox_sources_run_through_the_vox_oracle(tmp_path, capsys):
    """Vox sources with the stub `vox` (the real check needs the user's binary): repair rows for
    Vox, each rejected by `vox check` with its documented diagnostics; nothing needs attention."""
    from conftest import STUB_VOX
    shutil.copytree(ROOT / "examples" / "vox", tmp_path / "vox")
    config = tmp_path / "synth.toml"
    config.write_text(f'[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "vox"\nlang = "vox"\n\n'
                      f'[oracles]\nvox = "{STUB_VOX}"\n')
    code, summary = _run(["run", "--config", str(config)], capsys)
    assert code == 0 and summary["attention"] == []
    rows = read_rows(tmp_path / "run" / "rows" / "repair.jsonl.zst")
    assert rows and {r["lang"] for r in rows} == {"vox"}
    assert all(r["broken_verification"]["oracle"] == "vox" and not r["broken_verification"]["passed"] for r in rows)
    assert all(r["verification"]["passed"] and "stub" in r["verification"]["toolchain"] for r in rows)
