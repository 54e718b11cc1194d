"""A cached verdict must cost no compiler run, and a toolchain change must miss the cache."""
import os
import stat

from oracles.cache import VerdictCache
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate

BATCH = [Candidate.of("pub fn a() -> i32 { 1 }\n"), Candidate.of("pub fn b() -> i32 { \"x\" }\n"),
         Candidate.of("fn c() {}\n")]


def _wrapper(path, real_rustc, log, version):
    path.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n"
                    f"if [ \"$1\" = \"-V\" ]; then echo '{version}'; exit 0; fi\nexec {real_rustc} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _compile_calls(log) -> int:
    return sum("--emit=metadata" in line for line in log.read_text().splitlines()) if log.exists() else 0


def test_second_check_runs_no_compiler_and_toolchain_change_misses(tmp_path, real_rustc, monkeypatch):
    # The wrapper counts compiler calls in a log outside the scratch folder, which bubblewrap
    # (rightly) forbids: this test is about the cache, so it runs under the unshare sandbox.
    monkeypatch.setenv("SYNTH_SANDBOX", "unshare")
    log, rustc = tmp_path / "calls.log", tmp_path / "rustc"
    _wrapper(rustc, real_rustc, log, "rustc 1.95.0 (synth-test)")
    cache = VerdictCache(tmp_path / "cache")

    first = RustOracle(OracleSettings(rustc=str(rustc)), cache=cache).check(BATCH)
    calls_after_first = _compile_calls(log)
    assert calls_after_first >= 1

    log.unlink()
    again = RustOracle(OracleSettings(rustc=str(rustc)), cache=VerdictCache(tmp_path / "cache"))
    second = again.check(BATCH)
    assert not log.exists() or log.read_text() == ""  # no compile, not even a version probe
    assert again.stats.compiler_runs == 0 and again.stats.cache_hits == 3
    assert all(a.same_result(b) for a, b in zip(first, second))
    assert [v.mode for v in second] == ["cache"] * 3

    # An upgrade in place: same path, new version string.
    _wrapper(rustc, real_rustc, log, "rustc 1.96.0 (synth-test)")
    os.utime(rustc, ns=(1, 1))
    upgraded = RustOracle(OracleSettings(rustc=str(rustc)), cache=VerdictCache(tmp_path / "cache"))
    third = upgraded.check(BATCH)
    assert upgraded.toolchain == "rustc 1.96.0 (synth-test)"
    assert _compile_calls(log) >= 1 and upgraded.stats.cache_hits == 0
    assert all(a.same_result(b) for a, b in zip(first, third))


def test_flags_are_part_of_the_key(tmp_path):
    cache = VerdictCache(tmp_path / "cache")
    cand = [Candidate.of("pub async fn f() {}\n")]
    v2018 = RustOracle(OracleSettings(edition="2018"), cache=cache).check(cand)[0]
    o2015 = RustOracle(OracleSettings(edition="2015"), cache=cache)
    v2015 = o2015.check(cand)[0]
    assert o2015.stats.cache_hits == 0
    assert v2018.passed and not v2015.passed  # `async fn` is an error in edition 2015


def test_the_isolation_is_part_of_the_key(tmp_path):
    """A verdict made without a sandbox is not served to a run inside one (tests may reach the
    network or the home folder in one and not the other)."""
    from oracles.isolation.sandbox import Sandbox
    cache = VerdictCache(tmp_path / "cache")
    cand = [Candidate.of("pub fn f() -> i32 { 1 }\n")]
    RustOracle(OracleSettings(), cache=cache, sandbox=Sandbox(isolation="none")).check(cand)
    same = RustOracle(OracleSettings(), cache=cache, sandbox=Sandbox(isolation="none"))
    same.check(cand)
    assert same.stats.cache_hits == 1
    other = RustOracle(OracleSettings(), cache=cache, sandbox=Sandbox(isolation="unshare"))
    verdict = other.check(cand)[0]
    assert other.stats.cache_hits == 0 and verdict.sandbox["isolation"] == "unshare"
