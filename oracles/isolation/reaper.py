"""`python -I -S reaper.py -- ARGV...`: run ARGV; whatever it leaves behind dies with its parent.

A build script that starts `sleep 120` and exits leaves cargo waiting for the pipe the sleep
still holds, so a crate that compiles would end "timed out". As the child subreaper of ARGV,
this process adopts every orphan of the tree and kills it at once; when ARGV itself ends, the
rest is killed and ARGV's exit status is ours. Standard library only (it runs with -I -S).
"""
import ctypes
import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
POLL_MS = 20


def _children() -> list[int]:
    try:  # /proc/thread-self resolves in whichever PID namespace /proc was mounted from
        with open("/proc/thread-self/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _kill_orphans(main_pid: int | None) -> bool:
    """SIGKILL every child but `main_pid` (all of ours are adopted orphans) and reap those that
    are dead, each by its own pid: a wait on any child could reap `main_pid` and lose its status."""
    found = False
    for pid in _children():
        if pid == main_pid:
            continue
        found = True
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, os.WNOHANG)
        except (ProcessLookupError, ChildProcessError):
            pass
    return found


def main(argv: list[str]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.execvp(argv[0], argv)  # no subreaper here: run ARGV plainly rather than not at all
    main_pid = os.fork()
    if main_pid == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"{argv[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
    pidfd = os.pidfd_open(main_pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while not poller.poll(POLL_MS):
        _kill_orphans(main_pid)
    _, status = os.waitpid(main_pid, 0)
    for _ in range(100):  # the tree's leftovers; each round adopts the next generation
        if not _kill_orphans(None):
            break
        time.sleep(0.005)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    sys.exit(main(args))
