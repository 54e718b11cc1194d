"""Candidate code must not hurt the run or see a secret."""
import os
import shutil
import socket
import time
from pathlib import Path

import pytest
from conftest import processes_matching

from oracles.cargo.oracle import CargoOracle, Splice
from oracles.settings import OracleSettings
from oracles.rustc.oracle import RustOracle, RustcSettings
from oracles.isolation.environ import safe_environ
from oracles.isolation.sandbox import Limits, Sandbox, bwrap_available, namespaces_available
from oracles.verdict import Candidate, Verdict


def _test_candidate(body: str, name: str = "probe") -> Candidate:
    return Candidate.of(f"#[cfg(test)]\nmod tests {{\n    #[test]\n    fn {name}() {{\n{body}\n    }}\n}}\n")


def test_safe_environ_drops_secrets():
    source = {"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://x", "GITHUB_TOKEN": "t",
              "MY_SECRET_THING": "s", "AWS_ACCESS_KEY": "a", "HOME": "/root", "LANG": "C"}
    env = safe_environ({"RUST_BACKTRACE": "0", "HF_TOKEN": "leak"}, source=source)
    assert env == {"PATH": "/bin", "LANG": "C", "RUST_BACKTRACE": "0"}


def test_candidate_printing_environment_sees_no_secret(monkeypatch):
    secrets = {"OPENAI_API_KEY": "sk-synth-test-1", "ANTHROPIC_API_KEY": "ak-synth-test-2",
               "SOME_SERVICE_TOKEN": "tok-synth-test-3", "DB_PASSWORD_SECRET": "pw-synth-test-4",
               "SYNTH_UNLISTED_SETTING": "not-allowlisted-5"}  # not secret-looking: the allowlist drops it
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    oracle = RustOracle(OracleSettings(jobs=1))
    body = '        for (k, v) in std::env::vars() { println!("ENV {k}={v}"); }\n        panic!("show output");'
    (verdict,) = oracle.test([_test_candidate(body)])
    out = verdict.tests.output
    assert "ENV PATH=" in out  # the candidate really printed its environment
    for key, value in secrets.items():
        assert value not in out and key not in out


@pytest.mark.slow
def test_infinite_loop_times_out_and_leaves_nothing():
    oracle = RustOracle(OracleSettings(jobs=1), tuning=RustcSettings(test_timeout_s=2.0))
    start = time.monotonic()
    (verdict,) = oracle.test([_test_candidate("        let mut x = 0u64; loop { x = x.wrapping_add(1); std::hint::black_box(x); }", "spin_forever")])
    assert verdict.timed_out and not verdict.passed
    assert time.monotonic() - start < 2.0 + 15  # build time plus the limit, not forever
    assert not processes_matching("tests_bin"), "a timed-out test binary is still running"


@pytest.mark.slow
def test_fork_bomb_is_contained():
    body = (
        '        let me = std::env::current_exe().unwrap();\n'
        '        loop { let _ = std::process::Command::new(&me).args(["fork_bomb_marker", "--exact", "--nocapture"]).spawn(); }'
    )
    oracle = RustOracle(OracleSettings(jobs=1), tuning=RustcSettings(test_timeout_s=3.0))
    start = time.monotonic()
    (verdict,) = oracle.test([_test_candidate(body, "fork_bomb_marker")])
    assert not verdict.passed and verdict.timed_out
    assert time.monotonic() - start < 3.0 + 15
    time.sleep(0.2)
    assert not processes_matching("tests_bin"), "fork bomb left processes behind"


def test_candidate_tests_run_unprivileged_with_a_process_cap():
    body = (
        '        let status = std::fs::read_to_string("/proc/self/status").unwrap();\n'
        '        let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().to_string();\n'
        '        let mut kids = Vec::new();\n'
        '        for _ in 0..2000 {\n'
        '            match std::process::Command::new("sleep").arg("5").spawn() { Ok(c) => kids.push(c), Err(_) => break }\n'
        '        }\n'
        '        let spawned = kids.len();\n'
        '        for k in kids.iter_mut() { let _ = k.kill(); let _ = k.wait(); }\n'
        '        println!("SPAWNED {spawned} {uid}");\n'
        '        assert!(spawned < 2000, "no process cap");\n'
        '        assert!(!uid.contains("\\t0\\t"), "ran as root");'
    )
    (verdict,) = RustOracle(OracleSettings(jobs=1), tuning=RustcSettings(test_timeout_s=20.0)).test([_test_candidate(body)])
    if namespaces_available():
        assert verdict.sandbox["unprivileged_user"] is True
        assert verdict.passed, verdict.tests.output


def test_huge_allocation_fails_fast():
    oracle = RustOracle(OracleSettings(jobs=1), tuning=RustcSettings(test_timeout_s=20.0))
    start = time.monotonic()
    body = "        let v = vec![7u8; 4usize << 30];\n        assert_eq!(v[v.len() - 1], 7);"
    (verdict,) = oracle.test([_test_candidate(body)])
    assert not verdict.passed and not verdict.timed_out  # refused by the memory limit, not waited out
    assert verdict.tests.failed >= 1
    assert time.monotonic() - start < 20


def test_no_network_for_candidates():
    """A loopback server in this process is unreachable from inside the sandbox."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        body = f'        assert!(std::net::TcpStream::connect("127.0.0.1:{port}").is_err(), "network reachable");'
        (verdict,) = RustOracle(OracleSettings(jobs=1)).test([_test_candidate(body)])
        assert verdict.sandbox["network_isolated"] is (verdict.sandbox["isolation"] != "none")
        if namespaces_available():
            assert verdict.passed, verdict.tests.output
    finally:
        server.close()


def test_sandbox_workdir_is_removed_and_private():
    sandbox = Sandbox()
    with sandbox.workdir() as wd:
        result = sandbox.run(["sh", "-c", "echo $HOME; echo $TMPDIR; touch here"], wd, limits=Limits(timeout_s=5))
        assert result.stdout.split() == [str(wd), str(wd)] and (wd / "here").exists()
    assert not wd.exists()


PROBE_CRATE = Path(__file__).parents[1] / "fixtures" / "probe_crate"
LINGER_MARKER = "29.4171"  # the build script's left-behind `sleep`, unique enough to look for


def _probe_check(tmp_path, monkeypatch, isolation: str) -> tuple[Verdict, float, dict[str, str], list[bool]]:
    """Check the probe crate (its build.rs tries six escapes) and return what it found, per attempt."""
    monkeypatch.setenv("SYNTH_PROBE_API_KEY", "sk-probe-secret-1")
    dot_file = Path.home() / f".synth-probe-credentials-{os.getpid()}"  # like ~/.netrc; removed below
    dot_file.write_text("token")
    crate = tmp_path / "probe"
    shutil.copytree(PROBE_CRATE, crate)
    outside = [tmp_path / "outside.txt", Path("/var/tmp") / f"synth-probe-{tmp_path.name}-{os.getpid()}.txt"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    (crate / "probe.conf").write_text(
        f"write={outside[0]}\nwrite_root={outside[1]}\nread_home={dot_file}\nsecret=SYNTH_PROBE_API_KEY\nport={listener.getsockname()[1]}\n"
        f"linger={LINGER_MARKER}\nprocs={Limits().max_processes + 4}\nmemory_gib={2 * Limits().memory_bytes >> 30}\n")
    try:
        oracle = CargoOracle(sandbox=Sandbox(isolation=isolation))
        start = time.monotonic()
        (verdict,) = oracle.check([Splice(str(crate), "src/lib.rs", 0, 0, "")])
        elapsed = time.monotonic() - start
    finally:
        listener.close()
        escaped = outside[1].exists()
        outside[1].unlink(missing_ok=True)
        dot_file.unlink()
    notes = [d.message for d in verdict.diagnostics if "PROBE " in d.message]
    assert notes, f"the probe's report is missing: {[d.render() for d in verdict.diagnostics]}"
    found = dict(part.strip().split("=", 1) for part in notes[0].split("PROBE ", 1)[1].split(" | "))
    return verdict, elapsed, found, [outside[0].exists(), escaped]


@pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed (make setup)")
def test_build_script_escapes_all_fail_under_bubblewrap(tmp_path, monkeypatch):
    isolation = os.environ.get("SYNTH_TEST_PROBE_ISOLATION", "bwrap")  # =none shows this test going red
    verdict, elapsed, found, written = _probe_check(tmp_path, monkeypatch, isolation)
    assert set(found) == {"write", "write_root", "read_home", "secret", "net", "linger", "procs", "memory"}, found
    for attempt in ("write", "write_root", "read_home", "secret", "net", "procs", "memory"):
        assert found[attempt].startswith("blocked("), f"{attempt}: {found[attempt]}"
    assert found["linger"] == "started" and not processes_matching(LINGER_MARKER), "a build script's child outlived the check"
    assert written == [False, False]
    assert verdict.passed and not verdict.timed_out and elapsed < 5, (verdict, elapsed)
    assert verdict.sandbox["isolation"] == "bwrap" and verdict.sandbox["read_only_root"]


def test_build_script_probe_sees_escapes_without_isolation(tmp_path, monkeypatch):
    """The probe can tell: with isolation off, its write and its connection go through (the
    environment allowlist and the rlimits still hold), and the lingering child still dies."""
    verdict, elapsed, found, written = _probe_check(tmp_path, monkeypatch, "none")
    assert found["write"] == found["write_root"] == found["read_home"] == "DONE" and written == [True, True]
    assert found["net"] == "DONE"
    assert found["secret"].startswith("blocked(") and found["memory"].startswith("blocked(")
    assert not processes_matching(LINGER_MARKER) and verdict.passed and elapsed < 5
    assert verdict.sandbox["isolation"] == "none"


def test_a_left_behind_child_holding_the_output_pipe_dies_with_its_parent():
    """The shape cargo has: it reads a build script's pipe to the end. Without the reaper the
    `sleep` holds the pipe and the run waits out its timeout."""
    marker = "28.6153"
    script = f"sh -c 'sleep {marker} & echo child-started' | cat"
    for isolation in ("none", *(["unshare"] if namespaces_available() else []), *(["bwrap"] if bwrap_available() else [])):
        sandbox = Sandbox(isolation=isolation)
        with sandbox.workdir() as wd:
            result = sandbox.run(["sh", "-c", script], wd, limits=Limits(timeout_s=10, kill_orphans=True))
        assert result.returncode == 0 and result.stdout.strip() == "child-started", (isolation, result)
        assert result.elapsed_s < 3 and not processes_matching(marker), isolation


def test_an_isolation_this_machine_lacks_is_an_error_not_a_downgrade(monkeypatch):
    from oracles.errors import ToolchainMissing
    monkeypatch.setenv("SYNTH_SANDBOX", "chroot")
    with pytest.raises(ToolchainMissing, match="'chroot': choose auto, bwrap, unshare, none"):
        Sandbox()
    monkeypatch.setenv("SYNTH_SANDBOX", "none")
    assert Sandbox().isolation == "none" and Sandbox(isolation="auto").isolation in ("bwrap", "unshare", "none")


@pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed (make setup)")
def test_only_the_scratch_folder_and_named_caches_are_writable(tmp_path):
    cache = Path("/var/tmp") / f"synth-cache-{tmp_path.name}-{os.getpid()}"  # on the root file system
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    sandbox = Sandbox(isolation="bwrap")
    try:
        with sandbox.workdir() as wd:
            write = ["sh", "-c", f"touch here && touch {cache}/entry"]
            refused = sandbox.run(write, wd, limits=Limits(timeout_s=5))
            assert refused.returncode != 0 and "Read-only file system" in refused.stderr and (wd / "here").exists()
            allowed = sandbox.run(write, wd, limits=Limits(timeout_s=5), writable=[cache])
            assert allowed.returncode == 0, allowed.stderr
        assert (cache / "entry").exists()
    finally:
        shutil.rmtree(cache)
