"""The backtranslate and rft lanes against a real OpenAI-compatible server process, not our
loopback fake: `transformers serve` (transformers' own server, chat completions) on a tiny model
built here, through the real `openai` SDK; a free model (no key, $0). The server takes no `n`,
so RFT asks for each sample in its own request, with its own seed."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.fixtures.tiny_model import build_tiny_model
from synth.settings.config import load_config
from synth.lanes import LANES
from synth.pipeline.run import run_pipeline

pytestmark = pytest.mark.slow  # a trainer, Ray or a model server in every test

FN = "/// Returns {i} more than `x`.\npub fn plus_{i}(x: u64) -> u64 {{\n    x + {i}\n}}\n\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    model = build_tiny_model(root / "model", [FN.format(i=i) for i in range(6)] * 4)
    port = free_port()
    binary = shutil.which("transformers", path=str(Path(sys.executable).parent)) or "transformers"
    log = open(root / "server.log", "w")
    hub = root / "hub"  # its model listing scans a hub cache: an empty one here, offline
    hub.mkdir()
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([binary, "serve", str(model), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu", "--default-seed", "0"], stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"transformers serve exited {proc.returncode}: {(root / 'server.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{url}/v1/models", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("transformers serve did not answer within 120 s")
    yield url, model, root / "server.log"
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_backtranslate_and_rft_through_the_openai_sdk_against_transformers_serve(tmp_path, server, monkeypatch):
    url, model, log = server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a free model needs none
    (tmp_path / "lib" / "src").mkdir(parents=True)
    (tmp_path / "lib" / "Cargo.toml").write_text('[package]\nname = "lib"\nversion = "0.1.0"\nedition = "2021"\n')
    (tmp_path / "lib" / "src" / "lib.rs").write_text("".join(FN.format(i=i) for i in range(3)))
    config = tmp_path / "synth.toml"
    config.write_text(
        '[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "lib"\nlang = "rust"\n\n'
        f'[models.served]\nprovider = "openai"\nmodel = "{model}"\nbase_url = "{url}/v1"\nfree = true\n'
        'multi_sample = false\nmax_tokens = 24\ntemperature = 1.0\n\n'
        '[lanes.repair]\nenabled = false\n\n[lanes.doclane]\nenabled = true\n\n'
        '[lanes.backtranslate]\nenabled = true\nmodel = "served"\nlimit = 2\nmax_attempts = 1\n\n'
        '[lanes.rft]\nenabled = true\nmodel = "served"\nk = 2\nfamilies = ["codegen"]\n\n[tasks]\nenabled = false\n')
    summary = run_pipeline(load_config(config, LANES))
    backtranslate, rft = summary.lanes["backtranslate"], summary.lanes["rft"]
    assert summary.spent_usd == 0 and not summary.attention, summary.attention
    assert backtranslate["processed"] == 2 and backtranslate["rejected"] + backtranslate["rows"] == 2
    assert rft["items"] == 3 and rft["by_family"]["codegen"]["samples"] == 6  # the doc lane's 3 tasks, k = 2
    # calls the server answered (a fresh cache: none from it): the writer's, and one per RFT sample
    assert summary.llm_calls >= 2 + 6 and summary.llm_cache_hits == 0, log.read_text()[-2000:]
    rejected = [json.loads(line) for line in (tmp_path / "run" / "rejected" / "rft.jsonl").read_text().splitlines()]
    assert len(rejected) + summary.lanes["rft"]["rows"] >= 1
