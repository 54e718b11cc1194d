"""Rust oracle for standalone candidates: many candidates in one `rustc` call, verdicts exact.

Each batchable candidate goes into its own `pub mod` of one file, checked with
`--emit=metadata --error-format=json`. The verdicts must equal checking each candidate alone, so:
- the tree-sitter screen sends candidates that would mean something else inside a module
  (or would make rustc give up on the file) to a solo check;
- candidates that could see each other's names (import suggestions) are put in different batches;
- a sentinel module with a known late-phase warning proves rustc ran every phase: no sentinel,
  a timeout, an internal error, or a diagnostic that no single candidate owns => split the batch
  in two and check the halves (bisection), down to solo checks;
- a diagnostic that mentions another candidate is re-checked alone;
- when a batch had errors, its clean candidates are checked again in an error-free batch
  (rustc skips some lints, e.g. dead_code, once any error exists).
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from ..cache import CACHE_LOGIC_VERSION, VerdictCache
from .libtest import parse_test_output
from .batch import conflict_free_groups, in_file_order, may_miss_cfg_note, maybe_untrimmed, spread
from .screen import Screen, screen
from .diagnostics import BATCH_MARK, Region, Wrapper, file_diagnostics, is_summary, locate
from ..isolation.sandbox import OUTPUT_CAP_BYTES, Limits, Sandbox
from ..toolchain import start_compiler
from ..counters import Counters
from ..settings import OracleSettings
from ..verdict import Candidate, Diagnostic, Verdict, cut_note, json_lines

SENTINEL = (
    "mod __synth_sentinel {\n"
    "    #[allow(dead_code)]\n"
    "    fn __synth_sentinel_probe() { let mut sentinel_probe = 0u8; let _ = sentinel_probe; }\n"
    "}\n"
)
SENTINEL_REGION = Region(1, SENTINEL.count("\n"))
BATCH_FILE = "batch.rs"
SOLO_FILE = "candidate.rs"

# Errors after which rustc gives up before checking function bodies: a trait it cannot find, or a
# non-trait used as one. One such candidate costs a whole batch its late phases. On 656 real
# declarations (12 Debian crates) 222 of the 228 that stopped rustc had one, and all that had one
# stopped it. A cost hint only: whatever is left is still proven by the sentinel.
STOPPING_CODES = ("E0405", "E0404")


# rustc shortens a long type name (`Values<..>` for `std::collections::btree_map::Values<..>`) and
# writes the full one to a file with a random name once the text passes a length limit; the text
# includes the file name and line of any closure in it, so a candidate deep in a batch could read
# differently from the same candidate alone. `--verbose` prints full type names always.
STABLE_TEXT = ("--verbose",)


@dataclass
class RustcSettings:
    """How the oracle batches and times out (not user settings: those are OracleSettings)."""
    extra_args: tuple[str, ...] = ()
    batch_size: int = 512
    timeout_s: float = 30.0  # one solo check
    batch_timeout_per_candidate_s: float = 0.5
    test_timeout_s: float = 10.0
    test_memory_bytes: int = 2 * 1024**3
    stopping_codes: tuple[str, ...] = STOPPING_CODES  # () = plain bisection (the bench compares both)


@dataclass
class RustcStats(Counters):
    batch_runs: int = 0
    solo_runs: int = 0
    bisections: int = 0
    early_stops: int = 0  # batches rustc gave up on early: candidates with a stopping error checked alone
    clean_rechecks: int = 0
    contaminated: int = 0
    solo_reasons: dict[str, int] = field(default_factory=dict)
    untrusted_batches: dict[str, int] = field(default_factory=dict)  # why a batch's output was not used


@dataclass(frozen=True)
class Untrusted:
    """Why a batch's output cannot be used, and which of its candidates likely caused it."""

    reason: str
    stoppers: frozenset[int] = frozenset()  # positions of candidates with an error that stops rustc early


class RustOracle:
    id = "rustc"

    toolchain_probe = ("rustc", "-vV")  # the [oracles] key of its compiler, and what prints the version it depends on

    def __init__(self, settings: OracleSettings | None = None, sandbox: Sandbox | None = None,
                 cache: VerdictCache | None = None, tuning: RustcSettings | None = None):
        self.settings, self.config = settings or OracleSettings(), tuning or RustcSettings()
        self.sandbox = sandbox or Sandbox()
        self.cache = cache
        self.stats = RustcStats()
        self.recorded: list[tuple[str, str, str]] | None = None  # a bench sets a list: (source, file, crate type)
        self.rustc, self.toolchain = start_compiler(self.settings.rustc, "rustc to its path", cache, rustup_tool="rustc")

    @property
    def flags(self) -> dict:
        # the isolation too: a candidate's tests may pass or fail by what the sandbox lets them reach
        return {"edition": self.settings.edition, "extra_args": list(self.config.extra_args), "emit": "metadata",
                "stable_text": list(STABLE_TEXT), "logic": CACHE_LOGIC_VERSION, "isolation": self.sandbox.isolation}

    # -- public -------------------------------------------------------------------------------

    def check(self, candidates: list[Candidate], expect_pass: list[bool] | None = None) -> list[Verdict]:
        """One verdict per candidate, in order. Batched where that is exact, solo where not.

        `expect_pass` is the caller's guess (a mutant is expected to fail, an extracted
        declaration to pass). It never changes a verdict, only the cost: rustc skips its late
        lints once any error exists, so clean candidates that shared a batch with a failing one
        are checked again; keeping the expected failures apart avoids most of those re-checks."""
        verdicts: dict[int, Verdict] = {}
        todo: list[int] = []
        for i, cand in enumerate(candidates):
            hit = self._cached(cand)
            if hit is not None:
                verdicts[i] = hit
            else:
                todo.append(i)
        self.stats.candidates_compiled += len(todo)
        screens = {i: screen(candidates[i].text) for i in todo}
        solo = [i for i in todo if screens[i].solo_reason]
        for i in solo:
            reason = screens[i].solo_reason
            self.stats.solo_reasons[reason] = self.stats.solo_reasons.get(reason, 0) + 1
        batchable = [i for i in todo if not screens[i].solo_reason]
        size = self.config.batch_size
        if expect_pass is None:
            groups = conflict_free_groups(batchable, screens, size)
        else:
            groups = [g for want in (True, False) for g in conflict_free_groups(
                [i for i in batchable if bool(expect_pass[i]) is want], screens, size)]
        groups = spread(groups, self.settings.jobs, lambda i: candidates[i].text.count("\n") + 1)
        jobs = [lambda g=g: self._check_group([(i, candidates[i], screens[i]) for i in g]) for g in groups]
        jobs += [lambda i=i: {i: self._solo(candidates[i], screens[i])} for i in solo]
        with ThreadPoolExecutor(max_workers=max(1, self.settings.jobs)) as pool:
            for done in as_completed([pool.submit(job) for job in jobs]):
                result = done.result()
                verdicts.update(result)
                for i in sorted(result):  # stored as each batch ends: a run killed later keeps them
                    self._store(candidates[i], result[i])
        return [verdicts[i] for i in range(len(candidates))]

    def check_solo(self, candidate: Candidate) -> Verdict:
        """The reference: this candidate alone, as its own crate."""
        return self._solo(candidate, screen(candidate.text))

    def test(self, candidates: list[Candidate]) -> list[Verdict]:
        """Compile each candidate with `--test` and run its tests in the sandbox."""
        return [self._test_one(c) for c in candidates]

    # -- cache --------------------------------------------------------------------------------

    def _cached(self, cand: Candidate, kind: str = "check") -> Verdict | None:
        return self.cache.lookup(self, cand, kind) if self.cache is not None else None

    def _store(self, cand: Candidate, verdict: Verdict, kind: str = "check") -> None:
        if self.cache is not None:
            self.cache.store(self, cand, verdict, kind)

    # -- compiling ----------------------------------------------------------------------------

    def _rustc(self, source: str, file_name: str, crate_type: str, timeout_s: float):
        self.stats.compiler_runs += 1
        if self.recorded is not None:
            self.recorded.append((source, file_name, crate_type))
        with self.sandbox.workdir() as wd:
            (wd / file_name).write_text(source)
            return self.sandbox.run(self.check_argv(file_name, crate_type), wd, limits=Limits(timeout_s=timeout_s))

    def check_argv(self, file_name: str, crate_type: str) -> list[str]:
        """The rustc command line of one check (batch or solo) of `file_name` in the working folder."""
        return [self.rustc, "--crate-type", crate_type, "--emit=metadata", "--error-format=json", *STABLE_TEXT,
                "--json=diagnostic-short", "--edition", self.settings.edition, *self.config.extra_args, file_name,
                "-o", "out.rmeta"]

    def _solo(self, cand: Candidate, scr: Screen) -> Verdict:
        self.stats.solo_runs += 1
        crate_type = "bin" if scr.is_program else "lib"
        run = self._rustc(cand.text, SOLO_FILE, crate_type, self.config.timeout_s)
        diagnostics, internal_error = file_diagnostics(run.stderr, SOLO_FILE, cand.text)
        diagnostics = in_file_order(diagnostics) + ([cut_note(OUTPUT_CAP_BYTES)] if run.cut else [])
        if internal_error or (run.returncode not in (0, None) and not any(d.severity == "error" for d in diagnostics)):
            tail = run.stderr.strip().splitlines()[-1:] or ["no output"]
            diagnostics.append(Diagnostic(code="rustc-crash", severity="error",
                                          message=f"rustc exited {run.returncode}: {tail[0][:300]}"))
        passed = not run.timed_out and run.returncode == 0 and not any(d.severity == "error" for d in diagnostics)
        return Verdict(candidate_id=cand.id, passed=passed, diagnostics=diagnostics, oracle=self.id,
                       toolchain=self.toolchain, elapsed_s=run.elapsed_s, timed_out=run.timed_out,
                       mode="solo", sandbox=run.isolation)

    def _check_group(self, items: list[tuple[int, Candidate, Screen]]) -> dict[int, Verdict]:
        if len(items) == 1:
            i, cand, scr = items[0]
            return {i: self._solo(cand, scr)}
        outcome = self._run_batch(items)
        if isinstance(outcome, Untrusted):
            reasons = self.stats.untrusted_batches
            reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
            if 0 < len(outcome.stoppers) < len(items):
                # rustc gave up early after these candidates' errors: they are checked alone and
                # the others together again, instead of bisecting down to each of them.
                self.stats.early_stops += 1
                alone = {items[k][0]: self._solo(items[k][1], items[k][2]) for k in sorted(outcome.stoppers)}
                return {**alone, **self._check_group([it for k, it in enumerate(items) if k not in outcome.stoppers])}
            self.stats.bisections += 1  # nothing to go on: split the batch in two
            mid = len(items) // 2
            return {**self._check_group(items[:mid]), **self._check_group(items[mid:])}
        diags, contaminated, elapsed, isolation = outcome
        share = elapsed / len(items)
        results: dict[int, Verdict] = {}
        had_errors = any(d.severity == "error" for k in diags for d in diags[k]) or bool(contaminated)
        clean_items = []
        for k, (i, cand, scr) in enumerate(items):
            if k in contaminated:
                self.stats.contaminated += 1
                results[i] = self._solo(cand, scr)
            elif any(d.severity == "error" for d in diags[k]):
                results[i] = Verdict(candidate_id=cand.id, passed=False, diagnostics=diags[k], oracle=self.id,
                                     toolchain=self.toolchain, elapsed_s=share, mode="batched", sandbox=isolation)
            elif had_errors:
                clean_items.append((i, cand, scr))
            else:
                results[i] = Verdict(candidate_id=cand.id, passed=True, diagnostics=diags[k], oracle=self.id,
                                     toolchain=self.toolchain, elapsed_s=share, mode="batched", sandbox=isolation)
        if clean_items:
            self.stats.clean_rechecks += 1
            results.update(self._check_group(clean_items))
        return results

    def _run_batch(self, items):
        """Compile one batch. `Untrusted` when the output cannot be attributed with certainty."""
        self.stats.batch_runs += 1
        parts = [SENTINEL]
        regions = [SENTINEL_REGION]
        line = SENTINEL_REGION.last + 1
        for k, (_, cand, _) in enumerate(items):
            text = cand.text if cand.text.endswith("\n") else cand.text + "\n"
            n = text.count("\n")
            parts.append(f"pub mod __synth_c{k} {{\n{text}}}\n")
            regions.append(Region(line + 1, line + n))
            line += n + 2
        timeout = self.config.timeout_s + self.config.batch_timeout_per_candidate_s * len(items)
        run = self._rustc("".join(parts), BATCH_FILE, "lib", timeout)
        if run.timed_out:
            return Untrusted("timed out")
        diags: dict[int, list[Diagnostic]] = {k: [] for k in range(len(items))}
        contaminated: set[int] = set()
        sentinel_seen = False
        wrappers = [None] + [Wrapper(f"__synth_c{k}", frozenset(scr.types)) for k, (_, _, scr) in enumerate(items)]
        raws, cut = json_lines(run.stderr)
        if cut or run.cut:  # diagnostics past the cap are missing: whose they were is unknown
            return Untrusted("output cut at the cap")
        for raw in raws:
            if is_summary(raw):
                continue
            located = locate(raw, BATCH_FILE, regions, wrappers)
            if located.internal_error:
                return Untrusted("compiler error")
            if located.diagnostic is None:
                if raw.get("level") in ("error", "warning"):
                    return Untrusted("a diagnostic no single candidate owns")
                continue
            if located.region == 0:
                sentinel_seen |= located.diagnostic.code == "unused_mut"
                continue
            k = located.region - 1
            # Last line of defence: whatever part of a diagnostic still names a batch module
            # would differ from the candidate alone, so it is checked alone.
            if located.contaminated or BATCH_MARK in located.diagnostic.render():
                contaminated.add(k)
            diags[k].append(located.diagnostic)
        definers: dict[str, set[int]] = {}
        for k, (_, _, scr) in enumerate(items):
            for name in scr.defined:
                definers.setdefault(name, set()).add(k)
        for k, (_, cand, scr) in enumerate(items):
            if may_miss_cfg_note(diags[k], cand.text, scr) or maybe_untrimmed(diags[k], k, scr, definers):
                contaminated.add(k)
        if not sentinel_seen:  # rustc stopped before its late phases: some verdicts would be missing
            stoppers = frozenset(k for k, ds in diags.items() if any(d.code in self.config.stopping_codes for d in ds))
            return Untrusted("stopped before its late phases", stoppers)
        if run.returncode != 0 and not any(d.severity == "error" for ds in diags.values() for d in ds):
            return Untrusted(f"exit {run.returncode} without an error")
        return {k: in_file_order(ds) for k, ds in diags.items()}, contaminated, run.elapsed_s, run.isolation

    # -- tests --------------------------------------------------------------------------------

    def _test_one(self, cand: Candidate) -> Verdict:
        hit = self._cached(cand, "test")
        if hit is not None:
            return hit
        start = time.monotonic()
        self.stats.candidates_compiled += 1
        with self.sandbox.workdir() as wd:
            (wd / SOLO_FILE).write_text(cand.text)
            argv = [self.rustc, "--test", "--error-format=json", *STABLE_TEXT, "--edition", self.settings.edition,
                    *self.config.extra_args, SOLO_FILE, "-o", "tests_bin"]
            self.stats.compiler_runs += 1
            build = self.sandbox.run(argv, wd, limits=Limits(timeout_s=self.config.timeout_s))
            diagnostics, _ = file_diagnostics(build.stderr, SOLO_FILE, cand.text)
            built = build.returncode == 0 and (wd / "tests_bin").exists()
            outcome = None
            isolation = build.isolation
            if built:
                limits = Limits(timeout_s=self.config.test_timeout_s, memory_bytes=self.config.test_memory_bytes,
                                untrusted=True)
                ran = self.sandbox.run(["./tests_bin", "--test-threads=1"], wd, limits=limits,
                                       env={"RUST_BACKTRACE": "0"})
                outcome = parse_test_output(ran.stdout + ran.stderr, ran.timed_out, ran.returncode)
                isolation = ran.isolation
        passed = built and outcome is not None and outcome.ok
        verdict = Verdict(candidate_id=cand.id, passed=passed, diagnostics=diagnostics, oracle=self.id,
                          toolchain=self.toolchain, elapsed_s=time.monotonic() - start,
                          timed_out=build.timed_out or bool(outcome and outcome.timed_out),
                          tests=outcome, mode="solo", sandbox=isolation)
        self._store(cand, verdict, "test")
        return verdict
