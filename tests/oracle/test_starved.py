"""A compiler the machine could not start gives no verdict: it is run again, or the run stops."""
import contextlib
import os
import shutil
import subprocess
import sys
import threading

import pytest

from oracles.cache import VerdictCache
from oracles.isolation import starved as starved_module
from oracles.isolation.sandbox import Limits, bwrap_available, resolve_isolation
from oracles.errors import SandboxStarved
from oracles.isolation.starved import starvation
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate, Diagnostic, Verdict

HOG = """
import sys, threading, time
threading.stack_size(64 * 1024)
made = 0
try:
    for _ in range(int(sys.argv[1])):
        threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
        made += 1
except RuntimeError:
    pass  # the user's tasks ran out (another run's already count): they are all taken either way
print(made, flush=True)
time.sleep(120)
"""

needs_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or resolve_isolation(None) == "none" or not bwrap_available(),
    reason="compilers run as an unprivileged user only under root with bubblewrap")


@contextlib.contextmanager
def all_tasks_taken(release_after_s: float | None = None):
    """Every task RLIMIT_NPROC allows the sandbox's user, held by one process of that user, as a
    busy machine's other compilers hold them; given back after `release_after_s` if set."""
    hog = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-I", "-c", HOG, str(Limits().max_processes + 8)],
                           stdout=subprocess.PIPE, text=True)
    hog.stdout.readline()  # its threads are all made
    timer = threading.Timer(release_after_s, hog.kill) if release_after_s is not None else None
    if timer:
        timer.start()
    try:
        yield
    finally:
        if timer:
            timer.cancel()
        hog.kill()
        hog.wait()


CANDIDATES = [Candidate.of("pub fn answer() -> u8 { 42 }\n"), Candidate.of("pub fn answer() -> u8 { true }\n")]


@needs_nobody
def test_a_starved_compiler_is_run_again_and_answers():
    oracle = RustOracle(OracleSettings(jobs=1))
    with all_tasks_taken(release_after_s=1.0):
        good, bad = [oracle.check_solo(c) for c in CANDIDATES]
    assert good.passed, [d.render() for d in good.diagnostics]
    assert not bad.passed and [d.code for d in bad.errors] == ["E0308"], [d.render() for d in bad.diagnostics]


@needs_nobody
def test_a_machine_that_stays_starved_stops_the_run_and_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(starved_module, "STARVED_WAITS_S", (0.05, 0.1))
    cache = VerdictCache(tmp_path / "verdicts")
    oracle = RustOracle(OracleSettings(jobs=1), cache=cache)
    with all_tasks_taken(), pytest.raises(SandboxStarved, match="Resource temporarily unavailable"):
        oracle.check(CANDIDATES[:1])
    assert cache.lookup(oracle, CANDIDATES[0]) is None
    (verdict,) = oracle.check(CANDIDATES[:1])  # fed again: the same run answers
    assert verdict.passed


def test_a_stored_starved_verdict_is_computed_again(tmp_path):
    cache = VerdictCache(tmp_path / "verdicts")
    oracle = RustOracle(OracleSettings(jobs=1), cache=cache)
    said = {"starved": "rustc exited 126: setpriv: failed to execute rustc: Resource temporarily unavailable",
            "crashed": "rustc exited 101: end of query stack"}
    stored = {}
    for (what, message), cand in zip(said.items(), CANDIDATES):
        cache.store(oracle, cand, Verdict(candidate_id=cand.id, passed=False, oracle=oracle.id, toolchain=oracle.toolchain,
                                          diagnostics=[Diagnostic(code="rustc-crash", severity="error", message=message)]))
        stored[what] = cache.lookup(oracle, cand)
    assert stored["starved"] is None  # an older synth stored it as a verdict: no longer one
    assert stored["crashed"] is not None and stored["crashed"].diagnostics[0].message == said["crashed"]


def test_only_the_machine_saying_it_is_starved_counts():
    eagain = "setpriv: failed to execute rustc: Resource temporarily unavailable"
    ice = "failed to create helper thread: Os { code: 11, kind: WouldBlock, message: \"Resource temporarily unavailable\" }"
    assert starvation(126, eagain, untrusted=False) == eagain
    assert starvation(101, "thread 'rustc' panicked at jobserver.rs:124:14:\n" + ice, untrusted=False) == ice
    assert starvation(126, eagain, untrusted=True) == eagain  # the launcher: no candidate code ran
    assert starvation(101, ice, untrusted=True) is None  # a candidate's own threads: its failure
    # rustc's diagnostics quote source text, and an error exit is an answer
    quoted = '{"message": "mismatched types", "rendered": "// Resource temporarily unavailable"}'
    assert starvation(101, quoted, untrusted=False) is None
    assert starvation(1, eagain, untrusted=False) is None and starvation(0, eagain, untrusted=False) is None
