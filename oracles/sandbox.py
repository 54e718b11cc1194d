"""Run compilers and candidate code without letting them hurt the run or see a secret.

Every process gets: an environment built from an allowlist (secret-looking names removed even
then), a private temporary directory deleted afterwards, a wall-clock timeout that kills the whole
process tree, CPU/memory/file-size rlimits, and, where the OS allows it, fresh PID and network
namespaces (no network; when the namespace's first process dies the kernel kills the rest).
Untrusted code (tests) additionally runs as an unprivileged user so a process cap applies.
What isolation a run really had is reported with its result.
"""
from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "SOURCE_DATE_EPOCH")
SECRET_PATTERNS = ("*_KEY", "*_KEY_*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*", "OPENAI_*", "ANTHROPIC_*")
NOBODY = 65534
OUTPUT_CAP_BYTES = 8 * 1024 * 1024


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def safe_environ(extra: dict[str, str] | None = None, source: dict[str, str] | None = None) -> dict[str, str]:
    """Allowlisted variables of `source` plus `extra`; nothing secret-looking survives either."""
    source = os.environ if source is None else source
    env = {k: source[k] for k in ENV_ALLOWLIST if k in source}
    env.update(extra or {})
    return {k: v for k, v in env.items() if not is_secret_name(k)}


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 60.0
    memory_bytes: int | None = 4 * 1024**3  # address space (RLIMIT_AS)
    file_bytes: int = 512 * 1024**2  # largest file the process may write (RLIMIT_FSIZE)
    max_processes: int = 256  # RLIMIT_NPROC; only binding for an unprivileged user
    isolate_network: bool = True
    untrusted: bool = False  # run as an unprivileged user (candidate code, not the compiler)


@dataclass
class SandboxResult:
    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_s: float
    isolation: dict = field(default_factory=dict)


@functools.cache
def namespaces_available() -> bool:
    """Whether `unshare` can give us fresh PID and network namespaces here (root, or userns)."""
    if not shutil.which("unshare"):
        return False
    try:
        probe = subprocess.run(["unshare", "--fork", "--pid", "--kill-child", "--net", "true"],
                               capture_output=True, timeout=10, env=safe_environ())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _rlimit_args(limits: Limits) -> list[str]:
    """`prlimit` arguments (a wrapper, not preexec_fn, which can deadlock beside threads)."""
    cpu = int(limits.timeout_s) + 2
    args = [f"--cpu={cpu}:{cpu + 1}", f"--fsize={limits.file_bytes}", "--core=0"]
    if limits.memory_bytes:
        args.append(f"--as={limits.memory_bytes}")
    if limits.untrusted:
        args.append(f"--nproc={limits.max_processes}")
    return args


def _read_capped(path: Path) -> str:
    with open(path, "rb") as f:
        data = f.read(OUTPUT_CAP_BYTES)
    return data.decode("utf-8", errors="replace")


class Sandbox:
    """Runs commands in private working directories; safe to call from several threads."""

    def __init__(self, limits: Limits | None = None, extra_env: dict[str, str] | None = None):
        self.limits = limits or Limits()
        self.extra_env = dict(extra_env or {})

    @contextlib.contextmanager
    def workdir(self):
        """A private temporary directory, deleted (whatever ran in it) when the block ends."""
        path = Path(tempfile.mkdtemp(prefix="synth-sbx-"))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def run(self, argv: list[str], cwd: Path, *, stdin: str | None = None, limits: Limits | None = None,
            env: dict[str, str] | None = None) -> SandboxResult:
        limits = limits or self.limits
        use_ns = namespaces_available()
        unprivileged = limits.untrusted and os.geteuid() == 0 and use_ns
        wrapped = list(argv)
        if use_ns:
            ns = ["unshare", "--fork", "--pid", "--kill-child=SIGKILL"]
            if limits.isolate_network:
                ns.append("--net")
            if unprivileged:
                ns += ["--setuid", str(NOBODY), "--setgid", str(NOBODY)]
                _give_to(cwd, NOBODY)
            wrapped = ns + ["--"] + wrapped
        if shutil.which("prlimit"):
            wrapped = ["prlimit", *_rlimit_args(limits), "--"] + wrapped
        environ = safe_environ({"HOME": str(cwd), "TMPDIR": str(cwd), **self.extra_env, **(env or {})})
        isolation = {
            "pid_namespace": use_ns,
            "network_isolated": use_ns and limits.isolate_network,
            "unprivileged_user": unprivileged or (limits.untrusted and os.geteuid() != 0),
            "rlimits": shutil.which("prlimit") is not None,
            "memory_bytes": limits.memory_bytes,
            "timeout_s": limits.timeout_s,
        }
        with tempfile.TemporaryDirectory(prefix="synth-io-") as io_dir:
            out_path, err_path = Path(io_dir) / "out", Path(io_dir) / "err"
            start = time.monotonic()
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    wrapped, cwd=cwd, env=environ, stdout=out, stderr=err,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    start_new_session=True,
                )
                timed_out = False
                try:
                    if stdin is not None:
                        proc.stdin.write(stdin.encode())
                        proc.stdin.close()
                    _wait(proc, limits.timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                except BrokenPipeError:
                    pass
                finally:
                    _kill_group(proc)
            elapsed = time.monotonic() - start
            return SandboxResult(argv=list(argv), returncode=None if timed_out else proc.returncode,
                                 stdout=_read_capped(out_path), stderr=_read_capped(err_path),
                                 timed_out=timed_out, elapsed_s=elapsed, isolation=isolation)


def _wait(proc: subprocess.Popen, timeout_s: float) -> None:
    """Wake the moment the process exits (a pidfd); Popen.wait(timeout) polls with sleeps of up
    to 50 ms, which would dominate a 20 ms compiler call."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout_s)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout_s * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        proc.wait()
    finally:
        os.close(fd)


def _give_to(path: Path, uid: int) -> None:
    for root, _dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for name in files:
            os.chown(os.path.join(root, name), uid, uid)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the process group until it is empty, then reap the leader."""
    for _ in range(100):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            break
        except PermissionError:
            break
        if proc.poll() is not None:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
        time.sleep(0.01)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
