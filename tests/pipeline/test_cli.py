"""`synth check`: JSON lines, exit 0 all passed / 1 some failed / 2 usage."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT, STUB_VOX


def synth(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "synth.cli.main", *args], capture_output=True, text=True, cwd=cwd)


def test_check_json_lines_and_exit_codes(tmp_path):
    good, bad = tmp_path / "good.rs", tmp_path / "bad.rs"
    good.write_text("pub fn ok() -> u8 { 1 }\n")
    bad.write_text("pub fn no() -> u8 {\n    \"x\"\n}\n")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    done = synth("check", "--json", *cache, str(good))
    assert done.returncode == 0
    (line,) = done.stdout.splitlines()
    row = json.loads(line)
    assert set(row) >= {"path", "passed", "diagnostics", "oracle", "toolchain"} and row["passed"] is True
    from oracles.isolation.sandbox import resolve_isolation
    assert row["isolation"] == resolve_isolation()  # which sandbox the check really ran in

    done = synth("check", "--json", *cache, str(good), str(bad))
    assert done.returncode == 1
    rows = [json.loads(x) for x in done.stdout.splitlines()]
    assert [r["path"] for r in rows] == [str(good), str(bad)]
    (diag,) = rows[1]["diagnostics"]
    assert diag == {"code": "E0308", "severity": "error", "message": "mismatched types", "line": 2, "column": 5}

    assert synth("check", str(tmp_path / "missing.rs")).returncode == 2
    assert synth("check").returncode == 2


def test_check_vox_and_crate(tmp_path):
    vox_file = tmp_path / "bad.vox"
    vox_file.write_text("fn f() -> int {\n    ret 1\n}\n")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    done = synth("check", "--json", *cache, "--vox", str(STUB_VOX), str(vox_file),
                 str(ROOT / "examples/vox/numbers.vox"))
    assert done.returncode == 1
    rows = [json.loads(x) for x in done.stdout.splitlines()]
    assert [r["passed"] for r in rows] == [False, True] and rows[0]["oracle"] == "vox"
    done = synth("check", *cache, str(ROOT / "examples/rust"))
    assert done.returncode == 0 and "passed" in done.stdout and "sandbox: " in done.stdout


@pytest.mark.slow
def test_plan_prices_requests_without_calling(tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"stage": "backtranslate", "provider": "openai", "model": "gpt-4o-mini",
                                    "messages": [{"role": "user", "content": "Describe fn add"}], "max_tokens": 300,
                                    "base_url": "http://127.0.0.1:9/v1"}) + "\n")
    done = synth("plan", "--requests", str(requests), "--json", "--llm-cache", str(tmp_path / "llm"))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["calls"] == 1 and plan["rows"][0]["stage"] == "backtranslate" and plan["worst_case_usd"] > 0
    requests.write_text(json.dumps({"provider": "openai", "model": "unknown-model", "messages": []}) + "\n")
    refused = synth("plan", "--requests", str(requests), "--llm-cache", str(tmp_path / "llm"))
    assert refused.returncode == 2 and "no price for model `unknown-model`" in refused.stderr


@pytest.mark.slow
def test_bench_oracle_measures_the_pipeline_stream_of_given_crates(tmp_path):
    src = tmp_path / "tiny" / "src"
    src.mkdir(parents=True)
    (src / "lib.rs").write_text(
        "/// Doubles.\npub fn double(x: u32) -> u32 {\n    x * 2\n}\n\n"
        "/// Sums.\npub fn total(xs: &[u32]) -> u32 {\n    xs.iter().map(|&x| double(x)).sum()\n}\n\n"
        "pub struct Meters(pub f64);\n\n/// A trait this crate takes from a dependency.\n"
        "impl serde_like::Unit for Meters {\n    fn name(&self) -> &str {\n        \"m\"\n    }\n}\n")
    done = synth("bench", "oracle", "--n", "20", "--repeats", "1", "--crates", str(tmp_path / "tiny"), "--json")
    assert done.returncode == 0, done.stderr
    pipeline = json.loads(done.stdout)["pipeline"]
    assert pipeline["sources"] == [str(tmp_path / "tiny")] and pipeline["identical"] is True
    assert pipeline["n"] >= 4 and pipeline["failing"] >= 2 and "without_stop_hint" in pipeline
    assert synth("bench", "oracle", "--crates", str(tmp_path / "missing")).returncode == 2
