"""Rust oracle for declarations that live in a real crate: check them in place.

A scratch copy of the crate gets the candidate spliced over a byte span of one file; then
`cargo check --offline --message-format=json` (or `cargo test --offline`). Diagnostics in the
spliced span are given in the candidate's own coordinates; diagnostics elsewhere keep their file
path and line (the candidate may break its callers), and still fail the verdict.

The copy gets the checkable manifest of oracles/cargo/manifest.py (the one the batched crate
oracle uses): detached from its workspace, optional dependencies the default features leave off
taken out, dev-dependencies only for a test. Errors name the user's paths, never the scratch folder.
"""
from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..cache import VerdictCache, cached_verdict
from .manifest import DEBIAN_REGISTRY, ManifestError, cargo_config, checkable_manifest
from ..rustc.libtest import parse_test_output
from ..rustc.diagnostics import Region, is_summary, locate, spanless
from ..isolation.sandbox import Limits, Sandbox
from ..toolchain import start_cargo
from ..counters import Counters
from ..settings import OracleSettings
from ..verdict import Candidate, Diagnostic, Splice, TestOutcome, Verdict, crate_files, json_lines  # noqa: F401 - Splice: this oracle's candidate

SYSTEM_REGISTRY = Path(DEBIAN_REGISTRY)  # Debian's librust-*-dev crates
TEST_RUSTFLAGS = "--cap-lints=warn"  # a test run's verdict is its build and its tests, not the crate's lint policy
TEST_KIND = "test-lints-capped"  # its verdicts' cache kind (those stored before lints were capped are not read)


def copy_tree(src: Path, dest: Path) -> None:
    for path in crate_files(src):  # never build output
        if path.is_file():
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


@dataclass
class Scratch:
    crate: Path  # the crate's folder in the copy
    member_prefix: str  # cargo's paths start so ("": the copy is a workspace of its own)
    paths: dict[str, str]  # scratch path -> the user's path, for messages


def make_scratch(crate_dir: Path, workdir: Path, kind: str, features: tuple[str, ...] = ()) -> Scratch:
    """Copy the crate under `workdir`, ready for an offline `cargo check` (kind "check") or `cargo test`,
    with `features` on besides the default ones."""
    crate_dir = crate_dir.resolve()
    crate = workdir / "crate"
    copy_tree(crate_dir, crate)
    try:
        manifest, _ = checkable_manifest(crate_dir, dev=(kind != "check"), features=features)
        (crate / "Cargo.toml").write_text(manifest, encoding="utf-8")
        (crate / "Cargo.lock").unlink(missing_ok=True)  # it may pin versions the directory source lacks
    except ManifestError:
        pass  # cargo says what is wrong with it, in its own words
    cargo_home = workdir / "cargo-home"
    cargo_home.mkdir(parents=True, exist_ok=True)
    if SYSTEM_REGISTRY.is_dir():
        (cargo_home / "config.toml").write_text(cargo_config(str(SYSTEM_REGISTRY)), encoding="utf-8")
    return Scratch(crate, "", {str(crate): str(crate_dir), str(workdir): "<scratch>"})


MISSING_PACKAGE = re.compile(r"no matching package named `([^`]+)` found")


def cargo_failure(returncode: int, stderr: str, paths: dict[str, str]) -> str:
    """cargo's first error, whole, in the user's paths, and what to do about it."""
    text = stderr
    for scratch, user in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(scratch, user)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("error")), None)
    if start is None:
        first = "\n".join(lines[-20:]).strip() or "(no output)"
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith(("error", "warning:"))), len(lines))
        first = "\n".join(lines[start:end]).strip()
    message = f"cargo exited {returncode}: {first}"
    missing = MISSING_PACKAGE.search(first)
    if missing:
        name = missing.group(1)
        message += (f"\nwhat to do: the dependency `{name}` is not available offline. Provide it as a "
                    f"directory source (`cargo vendor`, or the system package librust-{name.replace('_', '-')}-dev "
                    f"under {SYSTEM_REGISTRY}), or make it an optional dependency off by default.")
    elif "<scratch>" in message or "failed to parse manifest" in first or "failed to read" in first:
        message += "\nwhat to do: check that the crate's Cargo.toml (and its workspace's) parse with `cargo metadata`."
    return message


@dataclass
class CargoSettings:
    """Time limits of a check and of a test run (user settings are OracleSettings)."""
    timeout_s: float = 120.0
    test_timeout_s: float = 60.0
    # threads a test binary runs its tests on: a crate's own suite is written to run side by side
    # (`cargo test`'s default), and on one thread it waits on its slowest tests one after another
    test_threads: int = 1


class CargoOracle:
    id = "cargo"

    toolchain_probe = ("cargo", "-V")  # the [oracles] key of its compiler, and what prints the version it depends on

    def __init__(self, settings: OracleSettings | None = None, sandbox: Sandbox | None = None,
                 cache: VerdictCache | None = None, tuning: CargoSettings | None = None):
        self.settings, self.config = settings or OracleSettings(), tuning or CargoSettings()
        self.sandbox = sandbox or Sandbox()
        self.cache = cache
        self.stats = Counters()
        self.cargo, self.rustc, self.toolchain = start_cargo(self.settings.cargo, cache)
        self.rustdoc = str(Path(self.cargo).with_name("rustdoc"))

    def check(self, splices: list[Splice]) -> list[Verdict]:
        return [self._cached_or(s, "check") for s in splices]

    def test(self, splices: list[Splice]) -> list[Verdict]:
        return [self._cached_or(s, TEST_KIND) for s in splices]

    @property
    def flags(self) -> dict:  # build scripts may act differently outside bubblewrap: its own key
        return {"offline": True, "isolation": self.sandbox.isolation}

    def _cached_or(self, splice: Splice, kind: str) -> Verdict:
        return cached_verdict(self.cache, self, splice.candidate(), kind, lambda cand: self._run(splice, cand, kind))

    def _run(self, splice: Splice, cand: Candidate, kind: str) -> Verdict:
        start = time.monotonic()
        src_root = Path(splice.crate_dir)
        with self.sandbox.workdir() as wd:
            scratch = make_scratch(src_root, wd, kind, splice.features)  # with its workspace; offline-ready manifest
            crate = scratch.crate
            target = crate / splice.path
            original = target.read_bytes()
            before, after = original[:splice.start_byte], original[splice.end_byte:]
            target.write_bytes(before + splice.text.encode() + after)
            first_line = before.count(b"\n") + 1
            region = Region(first_line, first_line + max(0, splice.text.count("\n") - (splice.text.endswith("\n"))))
            shift = splice.text.count("\n") - original[splice.start_byte:splice.end_byte].count(b"\n")
            env = {"CARGO_HOME": str(wd / "cargo-home"), "RUSTC": self.rustc, "RUSTDOC": self.rustdoc,
                   "CARGO_TARGET_DIR": str(wd / "target"), "CARGO_TERM_COLOR": "never"}
            testing = kind != "check"
            if testing:  # a suite's `deny(warnings)` meets lints newer than the crate: the tests are what count
                env["RUSTFLAGS"] = TEST_RUSTFLAGS
            # cargo runs build scripts and proc macros (untrusted code): the sandbox isolates them, and
            # kill_orphans stops a child one leaves behind from holding cargo's pipe until the timeout.
            argv = [self.cargo, "test" if testing else "check", "--offline", "--message-format=json"]
            if testing:
                argv.append("--no-run")
            self.stats.compiler_runs += 1
            run = self.sandbox.run(argv, crate, limits=Limits(timeout_s=self.config.timeout_s, kill_orphans=True), env=env)
            tests, isolation = None, run.isolation
            if testing and run.returncode == 0:
                tests, isolation = self._run_tests(run.stdout, wd, isolation)
        diagnostics = self._diagnostics(run.stdout, scratch.member_prefix + splice.path, region, shift)
        has_error = any(d.severity == "error" for d in diagnostics)
        passed = not run.timed_out and run.returncode == 0 and not has_error and (tests is None or tests.ok)
        if run.returncode not in (0, None) and not has_error and not run.timed_out:
            diagnostics.append(Diagnostic(code="cargo-exit", severity="error",
                                          message=cargo_failure(run.returncode, run.stderr, scratch.paths)))
        return Verdict(candidate_id=cand.id, passed=passed, diagnostics=diagnostics, oracle=self.id,
                       toolchain=self.toolchain, elapsed_s=time.monotonic() - start,
                       timed_out=run.timed_out or bool(tests and tests.timed_out), tests=tests, mode="crate",
                       sandbox=isolation)

    def _run_tests(self, stdout: str, wd: Path, isolation: dict) -> tuple[TestOutcome, dict]:
        """Run every test executable cargo built, as an unprivileged user with the test limits.
        (Doc tests are not run: rustdoc would have to run them with the toolchain's rights.)"""
        executables = [msg["executable"] for msg in json_lines(stdout)[0]
                       if msg.get("reason") == "compiler-artifact" and msg.get("executable") and
                       (msg.get("profile") or {}).get("test")]
        total = TestOutcome()
        limits = Limits(timeout_s=self.config.test_timeout_s, untrusted=True, memory_bytes=2 * 1024**3)
        for exe in executables:
            ran = self.sandbox.run([exe, f"--test-threads={self.config.test_threads}"], wd, limits=limits,
                                   env={"RUST_BACKTRACE": "0"})
            isolation = ran.isolation
            one = parse_test_output(ran.stdout + ran.stderr, ran.timed_out, ran.returncode)
            total = TestOutcome(passed=total.passed + one.passed, failed=total.failed + one.failed,
                                total=total.total + one.total, timed_out=total.timed_out or one.timed_out,
                                output=(total.output + one.output)[-4000:])
        return total, isolation

    @staticmethod
    def _diagnostics(stdout: str, path: str, region: Region, shift: int) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for msg in json_lines(stdout)[0]:  # a line cut at the output cap is left out
            if msg.get("reason") != "compiler-message":
                continue
            raw = msg["message"]
            if is_summary(raw) or raw.get("level") not in ("error", "warning"):
                continue
            primary = [s for s in raw.get("spans", []) if s.get("is_primary")]
            file_name = primary[0]["file_name"] if primary else None
            if file_name == path:
                located = locate(raw, path, [region])
                if located.diagnostic is not None:
                    out.append(located.diagnostic)
                    continue
            if not primary:
                out.append(spanless(raw))
                continue
            # Elsewhere in the crate: keep the file's own line numbers (pre-splice for lines after it).
            located = locate(raw, file_name, [Region(1, 10**9)])
            if located.diagnostic is None:
                out.append(spanless(raw))
                continue
            d = located.diagnostic
            if file_name == path and d.line and d.line > region.last:
                d = d.model_copy(update={"line": d.line - shift, "end_line": (d.end_line or d.line) - shift})
            out.append(d.model_copy(update={"path": file_name}))
        return out
