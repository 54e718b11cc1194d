"""Vox oracle: the user's `vox` binary (`vox check --format json FILE`, `vox test FILE`).

The binary is never bundled; if it is missing, every Vox item fails with a message naming the
setting, never a pass. The JSON shape follows ../shared/vox/VOX.md: an array of diagnostics with
`error_code`, `severity` ("Error"/"Warning"), `message`, `span{start_line,start_col,end_line,end_col}`.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor

from oracles.errors import SynthError
from ..cache import VerdictCache, cached_verdict
from ..isolation.sandbox import Limits, Sandbox
from ..toolchain import start_compiler
from ..counters import Counters
from ..settings import OracleSettings
from ..verdict import Candidate, Diagnostic, TestOutcome, Verdict

CANDIDATE_FILE = "candidate.vox"
# A candidate may not redefine what the fixture relies on (the Vox HumanEval runner's rule).
RESERVED = re.compile(r"^\s*(pub\s+)?fn\s+(main|assert|print)\s*\(", re.M)
CANARY = 'fn main() to str {\n    assert(false)\n    return "ok"\n}\n'


class VoxOutputError(SynthError, RuntimeError):
    """`vox` printed something that is not the documented JSON: surfaced, never read as a pass."""


@dataclass
class VoxSettings:
    """The documented `vox` commands and their time limits (user settings are OracleSettings)."""
    check_args: tuple[str, ...] = ("check", "--format", "json")
    test_args: tuple[str, ...] = ("test",)
    run_args: tuple[str, ...] = ("run", "--mode", "interp")
    extra_args: tuple[str, ...] = ()
    timeout_s: float = 60.0
    test_timeout_s: float = 30.0


def _first_json(text: str):
    """The first JSON value in `text` (`--for-llm` prints a human line after it)."""
    decoder = json.JSONDecoder()
    for start, ch in enumerate(text):
        if ch in "[{":
            try:
                return decoder.raw_decode(text[start:])[0]
            except json.JSONDecodeError:
                continue
    raise VoxOutputError(f"no JSON in vox output: {text.strip()[:200]!r}")


def parse_vox_diagnostics(stdout: str, stderr: str) -> list[Diagnostic]:
    """Diagnostics may come on stdout or stderr: read both."""
    for stream in (stdout, stderr):
        if "[" in stream or "{" in stream:
            try:
                value = _first_json(stream)
            except VoxOutputError:
                continue
            items = value.get("diagnostics", []) if isinstance(value, dict) else value
            return [_diagnostic(item) for item in items]
    raise VoxOutputError(f"no JSON diagnostics in vox output: {(stdout + stderr).strip()[:200]!r}")


def _diagnostic(item: dict) -> Diagnostic:
    span = item.get("span") or {}
    severity = str(item.get("severity", "Error")).lower()
    notes = [f"hint: {h}" for h in item.get("correction_hints", [])]
    notes += [f"fix: {f.get('label', '')}: `{f.get('replacement', '')}`" for f in item.get("suggested_fixes", [])]
    if item.get("expected_type") or item.get("found_type"):
        notes.append(f"expected `{item.get('expected_type')}`, found `{item.get('found_type')}`")
    return Diagnostic(
        code=item.get("error_code"), severity="warning" if severity.startswith("warn") else "error",
        message=item.get("message", ""), line=span.get("start_line"), column=span.get("start_col"),
        end_line=span.get("end_line"), end_column=span.get("end_col"), notes=notes,
    )


class VoxOracle:
    id = "vox"

    toolchain_probe = ("vox", "--version")  # the [oracles] key of its compiler, and what prints the version it depends on

    def __init__(self, settings: OracleSettings | None = None, sandbox: Sandbox | None = None,
                 cache: VerdictCache | None = None, tuning: VoxSettings | None = None):
        self.settings, self.config = settings or OracleSettings(), tuning or VoxSettings()
        self.sandbox = sandbox or Sandbox()
        self.cache = cache
        self.stats = Counters()
        self.binary, self.toolchain = start_compiler(self.settings.vox, "vox, or --vox PATH", cache, ("--version",))

    @property
    def flags(self) -> dict:
        return {"check": list(self.config.check_args), "extra": list(self.config.extra_args),
                "isolation": self.sandbox.isolation}

    def check(self, candidates: list[Candidate]) -> list[Verdict]:
        with ThreadPoolExecutor(max_workers=max(1, self.settings.jobs)) as pool:
            return list(pool.map(lambda c: self._cached_or(c, "check", self._check_one), candidates))

    def test(self, candidates: list[Candidate]) -> list[Verdict]:
        return [self._cached_or(c, "test", self._test_one) for c in candidates]

    def _cached_or(self, cand: Candidate, kind: str, compute) -> Verdict:
        return cached_verdict(self.cache, self, cand, kind, compute)

    def _run(self, cand: Candidate, args: tuple[str, ...], timeout_s: float, untrusted: bool):
        self.stats.compiler_runs += 1
        self.stats.candidates_compiled += 1
        with self.sandbox.workdir() as wd:
            (wd / CANDIDATE_FILE).write_text(cand.text)
            argv = [self.binary, *args, *self.config.extra_args, CANDIDATE_FILE]
            return self.sandbox.run(argv, wd, limits=Limits(timeout_s=timeout_s, untrusted=untrusted))

    def _check_one(self, cand: Candidate) -> Verdict:
        run = self._run(cand, self.config.check_args, self.config.timeout_s, untrusted=False)
        diagnostics: list[Diagnostic] = []
        if not run.timed_out:
            try:
                diagnostics = parse_vox_diagnostics(run.stdout, run.stderr)
            except VoxOutputError as exc:
                diagnostics = [Diagnostic(code="vox-output", severity="error", message=str(exc))]
        passed = not run.timed_out and run.returncode == 0 and not any(d.severity == "error" for d in diagnostics)
        if run.returncode not in (0, None) and not any(d.severity == "error" for d in diagnostics):
            diagnostics.append(Diagnostic(code="vox-exit", severity="error",
                                          message=f"vox exited {run.returncode} without an error diagnostic"))
        return Verdict(candidate_id=cand.id, passed=passed, diagnostics=diagnostics, oracle=self.id,
                       toolchain=self.toolchain, elapsed_s=run.elapsed_s, timed_out=run.timed_out,
                       mode="solo", sandbox=run.isolation)

    def _test_one(self, cand: Candidate) -> Verdict:
        start = time.monotonic()
        checked = self._check_one(cand)
        if not checked.passed:
            return checked
        run = self._run(cand, self.config.test_args, self.config.test_timeout_s, untrusted=True)
        ok = run.returncode == 0 and not run.timed_out
        tests = TestOutcome(passed=1 if ok else 0, failed=0 if ok else 1, total=1, timed_out=run.timed_out,
                            output=(run.stdout + run.stderr)[-4000:])
        return checked.model_copy(update={"passed": ok, "tests": tests, "timed_out": run.timed_out,
                                          "elapsed_s": time.monotonic() - start, "sandbox": run.isolation})

    def run_with_fixture(self, cand: Candidate, fixture: str) -> Verdict:
        """HumanEval-style: candidate + the fixture's `fn main() to str { assert(...) ... }`, run with
        `vox run --mode interp` (exit 0 = the asserts held). Refuses a candidate that redefines
        main/assert/print, and first checks that an `assert(false)` canary really fails."""
        if RESERVED.search(cand.text):
            return Verdict(candidate_id=cand.id, passed=False, oracle=self.id, toolchain=self.toolchain,
                           diagnostics=[Diagnostic(code="reserved-name", severity="error",
                                                   message="candidate redefines main, assert or print")])
        canary = self._run(Candidate.of(CANARY), self.config.run_args, self.config.test_timeout_s, untrusted=False)
        if canary.returncode == 0:
            raise VoxOutputError("`vox run` passed an assert(false) canary: test verdicts would mean nothing")
        program = Candidate.of(cand.text.rstrip("\n") + "\n\n" + fixture, cand.context_fingerprint)
        return self._cached_or(program, "run", self._run_one)

    def _run_one(self, program: Candidate) -> Verdict:
        run = self._run(program, self.config.run_args, self.config.test_timeout_s, untrusted=False)
        ok = run.returncode == 0 and not run.timed_out
        tests = TestOutcome(passed=int(ok), failed=int(not ok), total=1, timed_out=run.timed_out,
                            output=(run.stdout + run.stderr)[-4000:])
        return Verdict(candidate_id=program.id, passed=ok, oracle=self.id, toolchain=self.toolchain,
                       elapsed_s=run.elapsed_s, timed_out=run.timed_out, tests=tests, sandbox=run.isolation)
