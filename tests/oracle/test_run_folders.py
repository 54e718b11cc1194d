"""A run stopped by SIGTERM or SIGINT leaves no temp folder; the folders of one killed outright are
swept by the next run, never those of a run still alive (real `synth mutate` runs, real rustc)."""
import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import EXAMPLE_CRATE, ROOT

from oracles.counters import Counters
from oracles.isolation import run_folders


def _mine(tmp, pid: int) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if run_folders.owner(p) == pid)


def _mutate(tmp_path, name: str, tmp):
    return subprocess.Popen([sys.executable, "-m", "synth.cli.main", "mutate", str(EXAMPLE_CRATE),
                             "--out", str(tmp_path / f"out-{name}"), "--cache-dir", str(tmp_path / f"cache-{name}")],
                            cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _started(tmp_path, name: str):
    """A `synth mutate` run with its own temp dir, once it has a temp folder (it is compiling)."""
    tmp = tmp_path / f"tmp-{name}"
    tmp.mkdir()
    proc = _mutate(tmp_path, name, tmp)
    deadline = time.monotonic() + 120
    while not _mine(tmp, proc.pid):
        assert proc.poll() is None, f"the run ended before it made a temp folder: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no temp folder after 120 s"
        time.sleep(0.02)
    return proc, tmp


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_by_a_signal_leaves_no_temp_folder(tmp_path, stop):
    proc, tmp = _started(tmp_path, stop.name)
    proc.send_signal(stop)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert sorted(tmp.iterdir()) == []  # its folders, and any multiprocessing left (pymp-*)


@pytest.mark.slow
def test_a_killed_runs_folders_are_swept_by_the_next_but_a_live_runs_are_kept(tmp_path):
    proc, tmp = _started(tmp_path, "kill")
    proc.kill()
    proc.wait(timeout=60)
    assert _mine(tmp, proc.pid)  # SIGKILL cannot be caught: what it leaves is the next run's to sweep
    after = _mutate(tmp_path, "after", tmp)
    assert after.wait(timeout=300) == 0, after.stderr.read()
    assert sorted(tmp.iterdir()) == []  # the killed run's folders swept, the normal run's own removed
    (tmp / f"synth-io-{proc.pid}-left").mkdir()  # as a killed run leaves them
    alive = subprocess.Popen(["sleep", "60"])
    try:
        (tmp / f"synth-sbx-{alive.pid}-live").mkdir()  # a run that is still going
        (tmp / "synth-notes").mkdir()  # not a run folder: no pid in its name
        assert run_folders.sweep(tmp) == 1
        assert sorted(p.name for p in tmp.iterdir()) == ["synth-notes", f"synth-sbx-{alive.pid}-live"]
    finally:
        alive.kill()
        alive.wait()
    assert run_folders.sweep(tmp) == 1 and [p.name for p in tmp.iterdir()] == ["synth-notes"]
    # killed, not yet reaped by its parent (cron's `timeout` may exit first): a zombie is gone too
    zombie = subprocess.Popen(["sleep", "60"])
    zombie.kill()
    while open(f"/proc/{zombie.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    (tmp / f"synth-io-{zombie.pid}-zombie").mkdir()
    assert run_folders.sweep(tmp) == 1 and [p.name for p in tmp.iterdir()] == ["synth-notes"]
    zombie.wait()


@dataclasses.dataclass
@dataclasses.dataclass
class _Stats(Counters):
    checked: int = 0


class _Holding:
    """An oracle as a worker builds it, holding a scratch copy until closed."""

    def __init__(self, kind, settings, cache):
        self.folder, self.stats = run_folders.make("sbx"), _Stats()

    def check(self, items):
        return [True for _ in items]

    def close(self):
        run_folders.remove(self.folder)


def test_a_worker_closes_the_oracles_it_built_when_it_exits(monkeypatch):
    import atexit

    from synth.executor import farm
    from oracles.settings import OracleSettings
    exits = []
    monkeypatch.setattr(atexit, "register", exits.append)
    monkeypatch.setattr(farm, "_WORKER_ORACLES", {})
    farm.check_on_worker(_Holding, "cargo-crate", OracleSettings(), [1, 2], {})
    farm.check_on_worker(_Holding, "cargo-crate", OracleSettings(), [3], {})  # the same oracle, reused
    (held,) = farm._WORKER_ORACLES.values()
    assert held.folder.is_dir() and exits == [farm.close_worker_oracles]
    exits[0]()
    assert not held.folder.exists() and farm._WORKER_ORACLES == {}


def test_counters_give_what_a_check_added_and_merge_it_back():
    """A worker's counters come back as a difference and add into the driver's: numbers and
    per-reason counts alike (a reason the driver never saw is added, one unchanged is left out)."""
    from oracles.rustc.oracle import RustcStats
    driver, worker = RustcStats(compiler_runs=5, solo_reasons={"impl": 2}), RustcStats(solo_reasons={"impl": 1, "macro": 4})
    before = worker.snapshot()
    worker.compiler_runs += 3
    worker.solo_reasons["macro"] += 1
    worker.solo_reasons["splice"] = 2
    delta = worker - before
    assert delta.compiler_runs == 3 and delta.solo_reasons == {"macro": 1, "splice": 2}
    driver += delta
    assert driver.compiler_runs == 8 and driver.solo_reasons == {"impl": 2, "macro": 1, "splice": 2}
