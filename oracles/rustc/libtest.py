"""libtest's output (a `--test` binary, `cargo test`) read into a TestOutcome."""
from __future__ import annotations

import re

from ..verdict import TestOutcome

TEST_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", re.M)
TEST_SUMMARY = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed", re.M)
RUNNING = re.compile(r"^running (\d+) tests?", re.M)


def parse_test_output(output: str, timed_out: bool, returncode: int | None) -> TestOutcome:
    """Count libtest results (summary lines, else per-test lines; cargo runs several harnesses).
    A harness that died mid-run (abort, OOM, timeout) counts its unreported tests as failed."""
    summaries = TEST_SUMMARY.findall(output)
    total = sum(int(n) for n in RUNNING.findall(output))
    if summaries:
        passed = sum(int(p) for p, _ in summaries)
        failed = sum(int(f) for _, f in summaries)
    else:
        results = TEST_LINE.findall(output)
        passed = sum(1 for _, r in results if r == "ok")
        failed = sum(1 for _, r in results if r == "FAILED")
    if (timed_out or returncode not in (0, None)) and failed == 0:
        failed = max(1, total - passed)
    return TestOutcome(passed=passed, failed=failed, total=max(total, passed + failed),
                       timed_out=timed_out, output=output[-4000:])


# A rustc call costs ~25 ms before it reads a line, about what checking ~300 lines costs: a part
# smaller than that is not worth a call of its own.
