"""A command the machine could not start is not a verdict.

Every sandboxed run shares one unprivileged user, and RLIMIT_NPROC counts that user's tasks
(processes and threads) across all of them: beside another run, a test suite or a neighbour's
fork bomb, `setpriv` fails to exec the compiler (exit 126) or rustc panics making its helper
thread (exit 101), both with EAGAIN. Read as a verdict, that rejects a good mutant as "no
diagnostic", and the verdict cache keeps the rejection for every later run. So such a run is
tried again after a wait, and if the machine stays starved the run stops with `SandboxStarved`
(resumable: nothing wrong was stored) instead of answering."""
from __future__ import annotations

import time
from collections.abc import Callable

EAGAIN_TEXT = "Resource temporarily unavailable"  # strerror(EAGAIN), in setpriv's and rustc's words
# Waits before each retry: about a minute in all, longer than a candidate's test timeout, so a
# neighbour's fork bomb is killed before we give up.
STARVED_WAITS_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def starvation(returncode: int | None, stderr: str, untrusted: bool) -> str | None:
    """The line saying the machine could not make a process or thread, else None.

    rustc's own diagnostics (JSON lines) may quote any source text and are never read here; a
    compiler's error exit (1) is an answer. For untrusted code (candidate tests) only the
    launcher's failure to exec counts: a candidate that forks itself out of tasks has failed."""
    if returncode in (0, 1, None):
        return None
    for line in stderr.splitlines():
        if EAGAIN_TEXT in line and not line.lstrip().startswith("{"):
            if not untrusted or "failed to execute" in line:
                return line.strip()
    return None


def until_fed(run_once: Callable[[], object], untrusted: bool, what: str) -> tuple[object, str | None]:
    """`run_once()` (a SandboxResult), tried again while the machine is starved; the last result,
    and a sentence saying why it is still no answer (None: it is one)."""
    waits = iter(STARVED_WAITS_S)
    while True:
        result = run_once()
        cause = starvation(result.returncode, result.stderr, untrusted)
        if cause is None:
            return result, None
        wait = next(waits, None)
        if wait is None:
            return result, (f"{what} could not start for {sum(STARVED_WAITS_S):.0f} s ({cause}): the sandbox's user is "
                            f"out of processes or threads (RLIMIT_NPROC), e.g. beside other runs; nothing was recorded, "
                            f"run it again")
        time.sleep(wait)
