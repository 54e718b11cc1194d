"""Run compilers and candidate code without letting them hurt the run or see a secret.

Every process gets: an environment built from an allowlist (secret-looking names removed even
then), a private temporary directory deleted afterwards, a wall-clock timeout that kills the whole
process tree, CPU/memory/file-size rlimits, and the strongest isolation this machine offers:
- `bwrap` (bubblewrap): the root file system read-only, a private /tmp and home (the tools the
  run needs bound back read-only), only the scratch folder writable;
  fresh PID, network, IPC and UTS namespaces; the whole run as an unprivileged user (so build
  scripts and proc macros, which are untrusted code too, get the process cap); dies with us.
- `unshare`: fresh PID and network namespaces; only candidate tests run unprivileged.
- `none`: rlimits and the environment allowlist only.
`SYNTH_SANDBOX` (auto|bwrap|unshare|none) picks one; what a run really had is reported with
its result (`isolation` names it), and so is an output cut at the cap (`cut`)."""
from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import run_folders
from .environ import safe_environ
from .starved import until_fed
from ..errors import SandboxStarved

NOBODY = 65534
ISOLATIONS = ("bwrap", "unshare", "none")
REAPER = Path(__file__).with_name("reaper.py")
OUTPUT_CAP_BYTES = 8 * 1024 * 1024
WORKDIR_KIND = "sbx"
WORKDIR_PREFIX = f"synth-{WORKDIR_KIND}-"


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 60.0
    memory_bytes: int | None = 4 * 1024**3  # address space (RLIMIT_AS)
    file_bytes: int = 512 * 1024**2  # largest file the process may write (RLIMIT_FSIZE)
    max_processes: int = 1024  # RLIMIT_NPROC: an unprivileged user's tasks, over all its sandboxes at once
    isolate_network: bool = True
    untrusted: bool = False  # run as an unprivileged user (candidate code, not the compiler)
    kill_orphans: bool = False  # a process whose parent ended is killed at once (see reaper.py)


@dataclass
class SandboxResult:
    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_s: float
    isolation: dict = field(default_factory=dict)
    cut: bool = False  # an output stream ran past OUTPUT_CAP_BYTES: what it said after that is missing


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


@functools.cache
def bwrap_available() -> bool:
    """Whether bubblewrap runs here with the namespaces we ask of it (it may exist and still be
    refused them, e.g. inside a container without user namespaces)."""
    if not shutil.which("bwrap") or not shutil.which("setpriv"):  # setpriv: util-linux, like unshare
        return False
    try:
        probe = subprocess.run(["bwrap", *_BWRAP_FIXED, "--unshare-net", "true"],
                               capture_output=True, timeout=10, env=safe_environ())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def resolve_isolation(wanted: str | None = None) -> str:
    """`wanted` (default: $SYNTH_SANDBOX, else auto) made real: auto is the strongest available;
    asking for one this machine cannot give is an error, not a silent downgrade."""
    from ..errors import ToolchainMissing
    wanted = (wanted or os.environ.get("SYNTH_SANDBOX") or "auto").lower()
    if wanted not in ("auto", *ISOLATIONS):
        raise ToolchainMissing(f"sandbox isolation {wanted!r}: choose auto, {', '.join(ISOLATIONS)} (SYNTH_SANDBOX)")
    available = {"bwrap": bwrap_available(), "unshare": namespaces_available(), "none": True}
    if wanted == "auto":
        return next(name for name in ISOLATIONS if available[name])
    if not available[wanted]:
        raise ToolchainMissing(f"sandbox isolation {wanted!r} is not available on this machine"
                         + (" (install Debian's bubblewrap)" if wanted == "bwrap" else ""))
    return wanted


# Namespaces and mounts every bwrap run gets; /proc/sys read-only (bwrap leaves it writable to root).
# --as-pid-1: the command is the namespace's init, so its end tears the namespace down, and no
# bwrap init is left a zombie for an init that may never reap it.
_BWRAP_FIXED = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
                "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
                "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--die-with-parent")


def _bwrap_args(limits: Limits, scratch: Path, cwd: Path, tools: list[str], as_nobody: bool,
                writable: list[Path]) -> list[str]:
    args = ["bwrap", *_BWRAP_FIXED]
    if limits.isolate_network:
        args.append("--unshare-net")
    hidden = _hidden_folders(with_home=as_nobody)
    for folder in hidden:
        args += ["--tmpfs", folder]  # others' scratch folders; dot-files
    for top in sorted({_top_under(h, t) for h in hidden for t in tools} - {None}):
        args += ["--ro-bind", top, top]  # a tool the run needs, where the folders above are hidden
    for folder in [scratch, *writable]:
        args += ["--bind", str(folder), str(folder)]
    args += ["--chdir", str(cwd)]
    if as_nobody:  # setpriv drops every capability with root; bwrap keeps no_new_privs set
        return args + ["--", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    return args + ["--cap-drop", "ALL", "--"]


def _hidden_folders(with_home: bool = True) -> list[str]:
    """Folders a bwrap run sees empty: /tmp and the temp folder (other runs' scratch folders) and,
    for an unprivileged run, the caller's home (dot-files). A run that stays root keeps the home:
    its tool may be a wrapper reaching into it (a script around rustup's rustc)."""
    home = os.path.realpath(os.environ.get("HOME") or "/") if with_home else "/"
    found = ["/tmp", os.path.realpath(tempfile.gettempdir()), home if os.path.isdir(home) else "/"]
    return [f for i, f in enumerate(found) if f != "/" and f not in found[:i]]


def _nobody_can_run(tool: str) -> bool:
    """Whether the unprivileged user can reach and run `tool` in a bwrap view (where the hidden
    folders are world-traversable tmpfs); if not, the run stays root, without capabilities (and
    without the process cap, which root escapes)."""
    real = Path(os.path.realpath(tool))
    hidden = {Path(f) for f in _hidden_folders()}
    try:
        for folder in real.parents:
            if folder != Path("/") and folder not in hidden and not _allows(folder.stat(), 0o001):
                return False
        return _allows(real.stat(), 0o005)
    except OSError:
        return False


def _allows(st: os.stat_result, other_bits: int) -> bool:
    return st.st_uid == NOBODY or st.st_mode & other_bits == other_bits


def _top_under(folder: str, tool: str) -> str | None:
    """The entry of hidden `folder` holding `tool` (e.g. /tmp/pytest-of-root for a script a test wrote)."""
    if not tool:
        return None
    real = os.path.realpath(tool)
    if not os.path.isabs(tool) or not real.startswith(folder + os.sep):
        return None
    return os.path.join(folder, os.path.relpath(real, folder).split(os.sep)[0])


def _rlimit_args(limits: Limits, as_nobody: bool) -> list[str]:
    """`prlimit` arguments (a wrapper, not preexec_fn, which can deadlock beside threads)."""
    cpu = int(limits.timeout_s) + 2
    args = [f"--cpu={cpu}:{cpu + 1}", f"--fsize={limits.file_bytes}", "--core=0"]
    if limits.memory_bytes:
        args.append(f"--as={limits.memory_bytes}")
    if limits.untrusted or as_nobody:
        args.append(f"--nproc={limits.max_processes}")
    return args


def _read_capped(path: Path) -> tuple[str, bool]:  # the first OUTPUT_CAP_BYTES, and whether there was more
    with open(path, "rb") as f:
        data = f.read(OUTPUT_CAP_BYTES + 1)
    return data[:OUTPUT_CAP_BYTES].decode("utf-8", errors="replace"), len(data) > OUTPUT_CAP_BYTES


class Sandbox:
    """Runs commands in private working directories; safe to call from several threads."""

    def __init__(self, limits: Limits | None = None, extra_env: dict[str, str] | None = None,
                 isolation: str | None = None):
        self.limits = limits or Limits()
        self.extra_env = dict(extra_env or {})
        self.isolation = resolve_isolation(isolation)

    @contextlib.contextmanager
    def workdir(self):
        """A private temporary directory, deleted (whatever ran in it) when the block ends."""
        with run_folders.folder(WORKDIR_KIND) as path:
            yield path

    def run(self, argv: list[str], cwd: Path, *, stdin: str | None = None, limits: Limits | None = None,
            env: dict[str, str] | None = None, writable: list[Path] = ()) -> SandboxResult:
        """`writable`: folders besides the scratch folder the run may write (e.g. a shared cargo
        cache; under bwrap the unprivileged user must be allowed to write them). A run the machine
        could not start is run again, or ends in `SandboxStarved` (see starved.py)."""
        limits = limits or self.limits
        result, starved = until_fed(lambda: self._run_once(argv, cwd, stdin, limits, env, writable), limits.untrusted,
                                    os.path.basename(argv[0]))
        if starved:
            raise SandboxStarved(starved)
        return result

    def _run_once(self, argv: list[str], cwd: Path, stdin: str | None, limits: Limits,
                  env: dict[str, str] | None, writable: list[Path]) -> SandboxResult:
        environ = safe_environ({"HOME": str(cwd), "TMPDIR": str(cwd), **self.extra_env, **(env or {})})
        kind = self.isolation
        root = os.geteuid() == 0
        inner = list(argv)
        if limits.kill_orphans:
            # The interpreter itself, not a virtualenv's link to it: a checkout under a folder the
            # sandbox hides (/tmp, home) would take the link's target out of view.
            inner = [os.path.realpath(sys.executable), "-I", "-S", str(REAPER), "--", *inner]
        scratch = _scratch_of(cwd)
        tools = [_locate(t, cwd, environ) for t in dict.fromkeys([inner[0], argv[0]])]
        # Under bwrap the compiler runs unprivileged too: build scripts and proc macros are untrusted.
        as_nobody = root and kind != "none" and (limits.untrusted or kind == "bwrap" and all(map(_nobody_can_run, tools)))
        if as_nobody:
            _give_to(scratch if kind == "bwrap" else cwd, NOBODY)
        if kind == "bwrap":
            # The reaper's script is read, not run: bound back (the checkout may sit in a hidden
            # folder) without asking whether nobody may execute it.
            reaper = [str(REAPER)] if limits.kill_orphans else []
            wrapped = _bwrap_args(limits, scratch, cwd, tools + reaper + [environ.get("RUSTC", ""), environ.get("RUSTDOC", "")],
                                  as_nobody, [Path(w).resolve() for w in writable]) + inner
        elif kind == "unshare":
            ns = ["unshare", "--fork", "--pid", "--kill-child=SIGKILL"]
            if limits.isolate_network:
                ns.append("--net")
            if limits.kill_orphans:
                ns.append("--mount-proc")  # the reaper reads its children in /proc by this namespace's ids
            if as_nobody:
                ns += ["--setuid", str(NOBODY), "--setgid", str(NOBODY)]
            wrapped = ns + ["--"] + inner
        else:
            wrapped = inner
        if shutil.which("prlimit"):
            wrapped = ["prlimit", *_rlimit_args(limits, as_nobody), "--"] + wrapped
        isolation = {
            "isolation": kind,
            "read_only_root": kind == "bwrap",
            "pid_namespace": kind != "none",
            "network_isolated": kind != "none" and limits.isolate_network,
            "unprivileged_user": as_nobody or (limits.untrusted and not root),
            "rlimits": shutil.which("prlimit") is not None,
            "memory_bytes": limits.memory_bytes,
            "timeout_s": limits.timeout_s,
        }
        with run_folders.folder("io") as io_dir:
            out_path, err_path = Path(io_dir) / "out", Path(io_dir) / "err"
            start = time.monotonic()
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    wrapped, cwd=cwd, env=environ, stdout=out, stderr=err,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    start_new_session=True,
                )
                timed_out = False
                with run_folders.running(proc):  # stopped with the run if the run is stopped
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
            (stdout, out_cut), (stderr, err_cut) = _read_capped(out_path), _read_capped(err_path)
            return SandboxResult(argv=list(argv), returncode=None if timed_out else proc.returncode,
                                 stdout=stdout, stderr=stderr, timed_out=timed_out, elapsed_s=elapsed,
                                 isolation=isolation, cut=out_cut or err_cut)


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


def _locate(program: str, cwd: Path, environ: dict[str, str]) -> str:
    """The absolute path `program` runs from (a bare name is looked up on the run's PATH)."""
    if os.sep not in program:
        return shutil.which(program, path=environ.get("PATH")) or program
    return os.path.join(cwd, program)


def _scratch_of(cwd: Path) -> Path:
    """The sandbox workdir holding `cwd` (a crate check writes its target dir beside the crate),
    else `cwd` itself: the only folder a bwrap run may write."""
    cwd = Path(cwd).resolve()
    for folder in (cwd, *cwd.parents):
        if folder.name.startswith(WORKDIR_PREFIX) and folder.parent == Path(tempfile.gettempdir()).resolve():
            return folder
    return cwd


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
