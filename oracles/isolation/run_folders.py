"""Temporary folders of a run, gone when the run ends however it ends.

A folder's name carries the pid of the process that made it (`synth-<kind>-<pid>-<random>`):
- ended normally: each folder is removed by whoever made it (`folder()`, `remove()`);
- ended by SIGTERM (what cron's `timeout` sends) or SIGINT: `remove_on_stop()` has the signal
  remove this process's folders and stop the processes it started, then end the run as an
  exception would (exit status 128 + the signal's number), so exit handlers run too;
- ended by SIGKILL, which nothing can catch: the next run's `sweep()` removes the folders whose
  process is gone, and never a live process's.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path

NAME = r"synth-[a-z]+-(\d+)-"  # synth-<kind>-<pid>-<random>: whose run a folder is
_NAME = re.compile("^" + NAME)
_LOCK = threading.Lock()
_FOLDERS: set[Path] = set()
_PROCESSES: set = set()  # subprocess.Popen objects in a session of their own (a signal to us misses them)
_HANDLED: dict[int, object] = {}  # signal -> the handler it had before
_INSTALLED_BY: list[int] = []  # the pid whose run the handlers clean up (not a forked worker's)


def make(kind: str) -> Path:
    """A new private folder in the temp dir, registered until `remove()`."""
    path = Path(tempfile.mkdtemp(prefix=f"synth-{kind}-{os.getpid()}-"))
    with _LOCK:
        _FOLDERS.add(path)
    return path


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _LOCK:
        _FOLDERS.discard(Path(path))


@contextlib.contextmanager
def folder(kind: str):
    """A private folder for the block, removed when it ends."""
    path = make(kind)
    try:
        yield path
    finally:
        remove(path)


@contextlib.contextmanager
def running(proc):
    """`proc` (started with start_new_session) is stopped with the run if the run is stopped."""
    with _LOCK:
        _PROCESSES.add(proc)
    try:
        yield proc
    finally:
        with _LOCK:
            _PROCESSES.discard(proc)


def owner(path: Path) -> int | None:
    """The pid in a run folder's name; None for any other name."""
    found = _NAME.match(Path(path).name)
    return int(found.group(1)) if found else None


def sweep(tmp: str | Path | None = None) -> int:
    """Remove the run folders in `tmp` (default: the temp dir) whose process is gone; how many."""
    swept = 0
    for entry in Path(tmp or tempfile.gettempdir()).iterdir():
        pid = owner(entry)
        if pid is not None and not _alive(pid) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
            swept += 1
    return swept


def guard_run() -> int:
    """At a run's start: SIGTERM/SIGINT will clean up (from the main thread, where handlers can be
    set), and dead runs' folders are swept; how many were."""
    if threading.current_thread() is threading.main_thread():
        remove_on_stop()
    return sweep()


def remove_on_stop() -> None:
    """From now on SIGTERM and SIGINT first stop this process's children and remove its folders.
    Idempotent; only from the main thread (Python's rule for signal handlers)."""
    _INSTALLED_BY[:] = [os.getpid()]
    for number in (signal.SIGTERM, signal.SIGINT):
        if number not in _HANDLED:
            _HANDLED[number] = signal.getsignal(number)
            signal.signal(number, _on_stop)


def clean_up() -> None:
    """Stop the processes this run started and remove its folders, now."""
    with _LOCK:
        processes, folders = list(_PROCESSES), list(_FOLDERS)
    for proc in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    for path in folders:
        remove(path)


def _on_stop(number, frame) -> None:
    the_run = _INSTALLED_BY == [os.getpid()]  # a forked worker inherits the handler, not the run's folders
    if the_run:
        clean_up()
    before = _HANDLED.get(number)
    if callable(before):  # e.g. SIGINT's KeyboardInterrupt: `finally` blocks still run
        before(number, frame)
        return
    if not the_run:  # a forked worker: the signal's usual end
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return
    # the run unwinds: `finally` blocks and exit handlers run (multiprocessing removes its pymp-*
    # folder), and the exit status says which signal (128 + its number, as a shell reports it)
    raise SystemExit(128 + number)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:  # a killed run's process lingers as a zombie until its parent reaps it: it is gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True
