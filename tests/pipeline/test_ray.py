"""The Ray executor on a real local Ray cluster (2 CPUs, no dashboard, started here): the same
bytes as a local run, one cap across workers, a worker killed mid-run, a node with another
toolchain refused, and a clear error without Ray."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import ray
from conftest import EXAMPLE_CRATE, processes_matching
from benchmarks.fixtures.llm_server import FakeLLMServer
from test_pipeline import _workspace

from benchmarks.fixtures.scripted_llm import stage_responder
from synth.cli.main import main
from synth.settings.config import load_config
from synth.extract import extract_paths
from synth.lanes import LANES
from synth.pipeline.run import run_pipeline

pytestmark = pytest.mark.slow  # a trainer, Ray or a model server in every test

HECK = Path("/usr/share/cargo/registry/heck-0.4.0")  # a small crate of the pinned corpus
OUTPUTS = ("rows", "rejected", "train.jsonl", "val.jsonl", "manifest.json")


@pytest.fixture(scope="module")
def cluster():
    """Its workers inherit this environment (the loopback provider's key), as a real node's
    workers inherit that node's."""
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-test-loopback"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    if saved is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = saved


@pytest.fixture(scope="module")
def provider():
    responder = stage_responder(extract_paths([EXAMPLE_CRATE]).declarations)
    with FakeLLMServer(latency_s=(0.02, 0.06), responder=responder) as server:
        yield server


def _outputs(run: Path) -> dict:
    found = {}
    for name in OUTPUTS:
        path = run / name
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                found[str(file.relative_to(run))] = file.read_bytes()
    return found


def _config(tmp: Path, provider, executor: str, batch: int = 128):
    path = _workspace(tmp, provider.base_url + "/v1")
    path.write_text(path.read_text().replace("seed = 0\n", f'seed = 0\nexecutor = "{executor}"\nray_batch = {batch}\n', 1))
    return load_config(path, LANES)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, cluster, provider):
    tmp = tmp_path_factory.mktemp("local")
    summary = run_pipeline(_config(tmp, provider, "local"))
    assert summary.executor == {"executor": "local"} and summary.llm_calls > 0 and not summary.attention
    return summary, _outputs(tmp / "run")


def test_run_on_ray_writes_the_same_bytes_as_a_local_run(tmp_path, cluster, provider, local_run, capsys):
    config = _workspace(tmp_path, provider.base_url + "/v1")
    code = main(["run", "--config", str(config), "--executor", "ray", "--ray-address", cluster, "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0, summary["attention"]
    ran = summary["executor"]
    assert ran["executor"] == "ray" and ran["oracle_tasks"] > 0 and ran["llm_calls"] == summary["llm_calls"] > 0
    assert ran["worker_processes"] >= 1
    outputs = _outputs(tmp_path / "run")
    assert any(k.startswith("rows/") for k in outputs) and outputs == local_run[1]


def test_a_worker_killed_mid_run_costs_only_its_task(tmp_path, cluster, provider, local_run):
    """One worker killed while it compiles (Ray runs its batch again) and one while it waits on the
    provider (the driver counts that call at its worst case, as maybe charged, and asks again)."""
    config = _config(tmp_path, provider, "ray", batch=8)
    answered_before = Counter(provider.answered)
    killed = []

    def kill_one_of_each():
        for marker in ("ray::check_on_worker", "ray::send_on_worker"):
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                pids = processes_matching(marker)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(marker)
                    break
                time.sleep(0.005)

    killer = threading.Thread(target=kill_one_of_each, daemon=True)
    killer.start()
    summary = run_pipeline(config)
    killer.join(timeout=10)
    assert killed == ["ray::check_on_worker", "ray::send_on_worker"]
    assert not summary.attention and _outputs(tmp_path / "run") == local_run[1]
    [ledger] = (tmp_path / "run" / "ledgers").glob("*.sqlite")
    db = sqlite3.connect(ledger)
    settled_twice = db.execute("SELECT key FROM reservations WHERE state = 'settled' GROUP BY key "
                               "HAVING COUNT(*) > 1").fetchall()
    lost = db.execute("SELECT COUNT(*) FROM reservations WHERE state = 'lost'").fetchone()[0]
    print(f"\nkilled {killed}; {summary.llm_calls} calls, lost reservations {lost}, settled twice {settled_twice}")
    assert settled_twice == [] and lost == 1  # the killed call: kept at its worst case, never settled twice
    answered = Counter(provider.answered)
    answered.subtract(answered_before)
    assert sum(1 for n in answered.values() if n > 1) <= lost  # only the killed call can have been sent twice


def test_the_cap_holds_across_ray_workers(tmp_path, cluster):
    """The LLM layer's cap test with every provider call on a Ray worker: one ledger, in the driver."""
    import random

    from synth.executor.cluster import RayCluster
    from synth.llm.client import BudgetExceeded, LLMClient, LLMRequest, RetryPolicy, send_on_worker
    from synth.llm.cost.ledger import Ledger
    from synth.llm.cost.prices import PriceTable
    from synth.executor.ray import RemoteSender
    from synth.llm.response_cache import ResponseCache
    from synth.llm.cost.tokens import count_messages, count_text

    model = "gpt-4o-mini"
    price = PriceTable().price(model)
    prompt = "task number {}: write a function"
    rng = random.Random(11)
    ids = [rng.randrange(1500) for _ in range(2000)]  # repeats: the same cache key asked again
    cost = {i: price.cost(count_messages([{"role": "user", "content": prompt.format(i)}], model),
                          count_text(FakeLLMServer.reply_for({"messages": [{"role": "user", "content": prompt.format(i)}]}),
                                     model)) for i in set(ids)}
    cap = sum(cost.values()) / 2
    retry = RetryPolicy(base_s=0.005)
    with FakeLLMServer(seed=2, latency_s=(0.0, 0.01), p429=0.05, p500=0.03) as server:
        ledger = Ledger(tmp_path / "ledger.sqlite", cap)
        sender = RemoteSender(RayCluster(), retry, send_on_worker)
        client = LLMClient(ledger, ResponseCache(tmp_path / "cache"), retry=retry, seed=3, send=sender)

        def one(i):
            request = LLMRequest("openai", model, ({"role": "user", "content": prompt.format(i)},), max_tokens=200,
                                 base_url=server.base_url + "/v1")
            try:
                return client.complete(request)
            except BudgetExceeded:
                return "budget"

        with ThreadPoolExecutor(16) as pool:
            outcomes = list(pool.map(one, ids))
    totals = ledger.totals()
    print(f"\ncap ${cap:.6f}; settled ${totals.settled_usd:.6f}; committed ${totals.committed_usd:.6f}; "
          f"{sender.calls} provider calls from {len(sender.worker_pids)} worker processes; "
          f"{outcomes.count('budget')} refused by the budget; faults {dict(server.faults)}")
    assert sender.calls >= 500 and len(sender.worker_pids) >= 2  # provider calls made on two or more workers
    assert totals.committed_usd <= cap + 1e-12 and totals.settled_usd <= cap + 1e-12
    assert totals.settled_usd == pytest.approx(price.cost(server.input_tokens, server.output_tokens), rel=1e-9)
    assert max(server.answered.values()) == 1  # no request answered (and billed) twice
    assert outcomes.count("budget") > 0 and server.faults["429"] and totals.calls_open == 0


def test_mutate_on_a_corpus_crate_is_the_same_on_ray(tmp_path, cluster):
    def mutate(name: str, *extra: str) -> dict:
        code = main(["mutate", str(HECK), "--out", str(tmp_path / name), "--cache-dir", str(tmp_path / f"c-{name}"),
                     "--in-crate", "always", "--json", *extra])
        assert code == 0
        return _outputs(tmp_path / name)

    local = mutate("local")
    on_ray = mutate("ray", "--executor", "ray", "--ray-address", cluster)
    assert len(local["rows/repair.jsonl.zst"].splitlines()) > 50 and on_ray == local


def test_a_node_with_another_rustc_is_refused(tmp_path, cluster):
    """The driver sees a different rustc than the cluster's workers: nothing is checked."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rustc").write_text('#!/bin/sh\necho "rustc 1.0.0-other (000000000 2015-05-15)"\n')
    (fake / "rustc").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "synth.cli.main", "mutate", str(EXAMPLE_CRATE), "--out",
                           str(tmp_path / "out"), "--no-cache", "--in-crate", "never", "--executor", "ray",
                           "--ray-address", cluster], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "another toolchain than the driver's (rustc 1.0.0-other" in done.stderr
    assert not (tmp_path / "out" / "rows").exists()


def test_asking_for_ray_without_ray_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    code = main(["mutate", str(EXAMPLE_CRATE), "--out", str(tmp_path / "out"), "--executor", "ray"])
    assert code == 2 and "pip install '.[ray]'" in capsys.readouterr().err


def test_an_unreachable_cluster_or_bench_is_a_clear_error(tmp_path):
    synth = [sys.executable, "-m", "synth.cli.main"]
    done = subprocess.run([*synth, "mutate", str(EXAMPLE_CRATE), "--out", str(tmp_path / "out"), "--executor", "ray",
                           "--ray-address", "127.0.0.1:1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "cannot connect to the Ray cluster at '127.0.0.1:1'" in done.stderr
    done = subprocess.run([*synth, "bench", "extract", "--executor", "ray"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "`--executor ray` is for `bench oracle`" in done.stderr
