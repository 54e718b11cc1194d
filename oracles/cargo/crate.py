"""In-crate verification, batched: many splices (each over a different function) in one check of a
scratch copy of the crate, verdicts exactly those of checking each alone with cargo.

A splice's verdict: the diagnostics on its own lines (in its text's coordinates) and errors elsewhere
in the crate (path and line; warnings there are the crate's). A batch is trusted only when it reads
exactly, else its likely culprits are checked alone and the rest again (or it is split in two):
- a sentinel with a known late-phase warning must show up (rustc ran every phase);
- splices that could see each other (one names what another's new signature changed) share no
  batch, nor do two new signatures that one function elsewhere names (oracles/cargo/jobs.py);
- an error outside every splice belongs to the one new signature the function around it names
  (oracles/cargo/outside.py); several named: those splices are checked again apart; none: untrusted;
- no diagnostic points into another splice with a new signature, or names a place in a spliced
  file; clean splices of a batch with errors are checked again together (rustc drops lints then).
rustc's words for a splice can still depend on its company, so the groups are decided by the jobs
alone, never by what a cache holds or how the work is spread: each run gives the same verdicts.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import CACHE_LOGIC_VERSION, VerdictCache
from .probe import compiled_points
from ..turns import Turns
from .jobs import Job, batch_groups, cargo_failure, check_plan, is_sentinel, job_of
from .outside import attribute, by_place, elsewhere, outside_names, owners_outside, users
from .workdir import RUSTFLAGS, CargoRun, ScratchCrate, open_scratch
from ..rustc.batch import in_file_order
from ..isolation.sandbox import OUTPUT_CAP_BYTES, Sandbox
from ..toolchain import start_cargo
from ..counters import Counters
from ..settings import OracleSettings
from ..verdict import Candidate, Diagnostic, Splice, Verdict, cut_note, features_key, splice_candidates

Copy = tuple[str, tuple[str, ...]]  # a scratch copy: the crate folder, the features on besides the default
# A worker with no crate of its own left helps one with at least this many groups left: a helper's
# copy first builds the crate's dependencies and checks it once, worth it only for several checks.
HELP_FROM_GROUPS = 4


@dataclass
class CargoCrateStats(Counters):
    batch_runs: int = 0
    solo_runs: int = 0
    bisections: int = 0
    early_stops: int = 0  # untrusted batches split by their likely culprits instead of in halves
    clean_rechecks: int = 0
    probe_runs: int = 0  # checks of which functions a crate's configuration compiles
    elapsed_s: float = 0.0  # wall time of all cargo runs
    setup_s: float = 0.0  # ... of them, the checks of each crate as it is (dependencies built once)
    untrusted: dict[str, int] = field(default_factory=dict)
    solo_reasons: dict[str, int] = field(default_factory=dict)
    crate_candidates: dict[str, int] = field(default_factory=dict)  # by crate folder: splices checked
    crate_seconds: dict[str, float] = field(default_factory=dict)  # ... and the seconds of its runs
    crate_setup_s: dict[str, float] = field(default_factory=dict)  # ... of them, each copy's first check


class CargoCrateOracle:
    id = "cargo-crate"

    toolchain_probe = ("cargo", "-V")  # the [oracles] key of its compiler, and what prints the version it depends on

    def __init__(self, settings: OracleSettings | None = None, sandbox: Sandbox | None = None,
                 cache: VerdictCache | None = None, batch_size: int = 128, timeout_s: float = 300.0, direct: bool = True):
        settings = settings or OracleSettings()
        self.sandbox = sandbox or Sandbox()
        self.direct = direct  # checks after a crate's first run its rustc command (oracles/cargo/direct.py), not cargo
        self.workers, self._turns = settings.jobs, Turns()  # crates checked side by side (oracles/turns.py)
        self.keep_checks = False  # each copy keeps the checks it made (a benchmark replays them: its floor)
        self.cache, self.batch_size, self.timeout_s, self.stats = cache, batch_size, timeout_s, CargoCrateStats()
        self.cargo, self.rustc, self.toolchain = start_cargo(settings.cargo, cache)
        # by copy (crate folder, features on besides the default ones): its scratch copy (or why none), sentinel seen
        self._scratch: dict[Copy, ScratchCrate | str] = {}
        self._sentinel_ok: dict[Copy, bool] = {}
        self._originals: dict[Copy, Verdict] = {}  # one check of each crate as it is
        self._answered: set[str] = set()  # candidates this oracle gave a verdict for (grouped once a process)
        self._helpers: dict[Copy, list[ScratchCrate]] = {}  # spare copies for workers that help with a crate

    @property
    def flags(self) -> dict:
        # build scripts may act differently outside bubblewrap: the isolation is part of the key
        return {"rustflags": RUSTFLAGS, "logic": CACHE_LOGIC_VERSION, "scope": "crate", "isolation": self.sandbox.isolation}

    def job(self, splice: Splice, name: str, original: str = "", kind: str = "", trait_impl: bool = False) -> Job:
        """A splice to check, with what decides which others it may share a check with."""
        return job_of(splice, name, original, kind, trait_impl)

    def each_crate(self, work, items: list, cost=None) -> list:
        """`work(item)` for each item (one crate's checks), crates side by side, results in order;
        the items of most `cost` start first, so that no long one is left running alone at the end."""
        order = sorted(range(len(items)), key=lambda k: -cost(items[k])) if cost else list(range(len(items)))
        done = self._turns.map(work, [items[k] for k in order], self.workers)
        return [part for _, part in sorted(zip(order, done), key=lambda it: it[0])]

    def copies(self, helpers: bool = False) -> list[ScratchCrate]:
        """Each crate's copy (and, with `helpers`, the helpers' copies)."""
        return ([s for s in self._scratch.values() if isinstance(s, ScratchCrate)] +
                ([s for spare in self._helpers.values() for s in spare] if helpers else []))

    def close(self) -> None:
        for scratch in self.copies(helpers=True):
            scratch.close()
        self._scratch, self._helpers = {}, {}

    # -- crates ---------------------------------------------------------------------------------

    def scratch(self, crate_dir: str, features: tuple[str, ...] = ()) -> ScratchCrate | str:
        """The crate's scratch copy (with `features` on besides the default), or why it cannot have one."""
        copy = (crate_dir, features)
        if copy not in self._scratch:
            self._scratch[copy] = open_scratch(Path(crate_dir), self.cargo, self.rustc, self.sandbox,
                                               self.timeout_s, features, self.direct)
            if self.keep_checks and isinstance(self._scratch[copy], ScratchCrate):
                self._scratch[copy].log = []
        return self._scratch[copy]

    def original(self, crate_dir: str, features: tuple[str, ...] = ()) -> Verdict:
        """The crate as it is: passed means every declaration the compiler sees in it (compiled()
        says which) compiles in its real context."""
        copy = (crate_dir, features)
        scratch = self.scratch(*copy)
        if isinstance(scratch, str):
            return Verdict(candidate_id="", passed=False, oracle=self.id, toolchain=self.toolchain,
                           diagnostics=[Diagnostic(code="crate-manifest", severity="error", message=scratch)])
        if copy in self._originals:
            return self._originals[copy]
        cand = Candidate.of("", f"crate:{scratch.hash}:original" + features_key(features))
        hit = self._cached(cand)
        if hit is not None:
            self._sentinel_ok[copy] = not hit.sandbox.get("no_sentinel", True)
            self._originals[copy] = hit
            return hit
        run = self._run(scratch, [], sentinel=True)
        self.stats.setup_s += run.elapsed_s
        self._sentinel_ok[copy] = any(is_sentinel(m) for m in run.messages)
        errors = [d for d in self._elsewhere(run) if d.severity == "error"]
        errors += cargo_failure(run, errors)
        verdict = Verdict(candidate_id=cand.id, passed=not errors and run.returncode == 0, diagnostics=errors,
                          oracle=self.id, toolchain=self.toolchain, elapsed_s=run.elapsed_s, timed_out=run.timed_out,
                          mode="crate", sandbox={**run.isolation, "no_sentinel": not self._sentinel_ok[copy]})
        self._store(cand, verdict)
        self._originals[copy] = verdict
        return verdict

    def compiled(self, crate_dir: str, features: tuple[str, ...], points: list[tuple[str, int]]) -> set[int]:
        """Which of `points` (file, byte offset of a body's start) the compiler sees (oracles/cargo/probe.py)."""
        return compiled_points(self, crate_dir, features, points,
                               lambda at, text: Splice(crate_dir, at[0], at[1], at[1], text, features))

    def facts(self, crate_dir: str, features: tuple[str, ...] = ()) -> dict:
        return {} if isinstance(s := self.scratch(crate_dir, features), str) else {**s.facts, "crate_hash": s.hash}

    # -- splices --------------------------------------------------------------------------------

    def check(self, jobs: list[Job]) -> list[Verdict]:
        """One verdict per job, in order: batched per crate where that is exact. Crates side by
        side, the most jobs first; the last crate's groups shared by the idle workers."""
        stored, same_as, by_copy = self.plan_check(jobs)
        todo = sorted([(copy, indices) for copy, indices in by_copy.items() if any(i not in stored for i in indices)],
                      key=lambda item: -len(item[1]))
        self.stats.candidates_compiled += sum(i not in stored for _, indices in todo for i in indices)
        verdicts: dict[int, Verdict] = {}
        def groups(item) -> list[list[int]]:  # each group with a job the cache does not hold
            copy, indices = item
            _add(self.stats.crate_candidates, Path(copy[0]).name, sum(i not in stored for i in indices))
            return [g for g in self.groups(copy, indices, jobs) if not all(i in stored for i in g)]

        def check_group(item, group: list[int], helping: bool) -> None:  # whole (its company as in any run), stored at once
            with self.helper_copy(item[0]) if helping else contextlib.nullcontext(self.scratch(*item[0])) as scratch:
                verdicts.update(self.kept(self._check_group_whole(scratch, [(i, jobs[i]) for i in group], jobs),
                                          stored, jobs))
        self._turns.share(todo, groups, check_group, self.workers, HELP_FROM_GROUPS)
        verdicts.update(stored)
        return self.answered(jobs, verdicts, same_as)

    @contextlib.contextmanager
    def helper_copy(self, copy: Copy):
        """A copy of the crate of its own for a worker that helps with its groups: made (and its
        dependencies built, its rustc command noted, as the first copy's) once, then lent again."""
        spare = self._helpers.setdefault(copy, [])
        if not spare:
            twin = open_scratch(Path(copy[0]), self.cargo, self.rustc, self.sandbox, self.timeout_s, copy[1], self.direct)
            twin.log = [] if self.keep_checks else None
            self._run(twin, [], sentinel=True)
            spare.append(twin)
        scratch = spare.pop()
        try:
            yield scratch
        finally:
            spare.append(scratch)

    def plan_check(self, jobs: list[Job]) -> tuple[dict, dict, dict]:
        """What a check of `jobs` needs (oracles/cargo/jobs.py `check_plan`)."""
        return check_plan(jobs, splice_candidates([job.splice for job in jobs]), self._cached, self._answered)

    def answered(self, jobs: list[Job], verdicts: dict[int, Verdict], same_as: dict[int, int]) -> list[Verdict]:
        """The verdicts in order, a repeated candidate's its first's; remembered as answered."""
        verdicts.update({i: verdicts[first] for i, first in same_as.items()})
        self._answered.update(verdicts[i].candidate_id for i in verdicts)
        return [verdicts[i] for i in range(len(jobs))]

    def groups(self, copy: Copy, indices: list[int], jobs: list[Job]) -> list[list[int]]:
        """The checks a copy's jobs are made in: decided by the jobs alone (never by which of them
        a cache holds, or by how the work is spread), so a verdict is the same in any run."""
        if self.original(*copy).passed is False or not self._sentinel_ok.get(copy):
            return [[i] for i in indices]  # no sentinel, no batch: checked alone
        return batch_groups([(i, jobs[i]) for i in indices], self.batch_size, self._reach(self.scratch(*copy)))

    def check_together(self, jobs: list[Job]) -> list[Verdict]:
        """Jobs `groups` put together, checked as that group (on a cluster's worker)."""
        self.stats.candidates_compiled += len(jobs)
        found = self._check_group_whole(self.scratch(*jobs[0].splice.copy), list(enumerate(jobs)), jobs)
        return [found[i] for i in range(len(jobs))]

    def _check_group_whole(self, scratch: ScratchCrate, items: list[tuple[int, Job]], jobs: list[Job]) -> dict[int, Verdict]:
        later = {"clean": [], "shared": []}  # rechecks stay within the group
        return {**self._check_group(scratch, items, later), **self._check_later(scratch, jobs, later)}

    def kept(self, found: dict[int, Verdict], stored: dict, jobs: list[Job]) -> dict[int, Verdict]:
        """A checked group's verdicts not yet `stored`, stored at once as its check ends (those compiled again counted)."""
        fresh = {i: v for i, v in found.items() if i not in stored}
        if self.cache is not None:
            if again := len(found) - len(fresh):  # a group a killed run had begun storing
                self.cache.count_redone(again)
            with self.cache.transaction():
                for i in sorted(fresh):  # (the cache skips a verdict it gave)
                    self._store(jobs[i].splice.candidate(), fresh[i])
        return fresh

    def _check_later(self, scratch: ScratchCrate, jobs: list[Job], later: dict) -> dict[int, Verdict]:
        verdicts: dict[int, Verdict] = {}
        reach = self._reach(scratch)
        while later["clean"] or later["shared"]:
            self.stats.clean_rechecks += 1
            again, later = later, {"clean": [], "shared": []}
            for key, items in again.items():
                for group in batch_groups(items, self.batch_size, reach if key == "shared" else None):
                    verdicts.update(self._check_group(scratch, [(i, jobs[i]) for i in group], later))
            if all(sorted(later[k]) == sorted(again[k]) for k in later):  # no progress: alone
                verdicts.update({i: self._solo(scratch, job.splice) for k in later for i, job in later[k]})
                break
        return verdicts

    def _reach(self, scratch: ScratchCrate):
        """The functions of the crate naming what a job defines."""
        index = users(scratch.root)
        return lambda job: frozenset().union(*(index.get(n, frozenset()) for n in job.seen))

    def check_solo(self, splice: Splice) -> Verdict:
        """The reference: this splice alone in the crate."""
        return self._solo(self.scratch(*splice.copy), splice)

    # -- internals ------------------------------------------------------------------------------

    def _run(self, scratch: ScratchCrate, splices: list[Splice], sentinel: bool, cargo: bool = False) -> CargoRun:
        self.stats.compiler_runs += 1
        with self._turns.compiling():  # another crate's checks may go on meanwhile
            run = scratch.check(splices, sentinel=sentinel, cargo=cargo)
        self.stats.elapsed_s += run.elapsed_s
        _add(self.stats.crate_seconds, scratch.source.name, run.elapsed_s)
        if scratch.runs == 1:  # a copy's first check builds what the others reuse
            _add(self.stats.crate_setup_s, scratch.source.name, run.elapsed_s)
        return run

    def _solo(self, scratch: ScratchCrate, splice: Splice, cargo: bool = False) -> Verdict:
        self.stats.solo_runs += 1
        run = self._run(scratch, [splice], sentinel=False, cargo=cargo)
        diagnostics = in_file_order(attribute(run)[0][0]) + by_place(self._elsewhere(run))
        diagnostics += [cut_note(OUTPUT_CAP_BYTES)] if run.cut else []  # pass or fail stands; the rest is missing
        failure = cargo_failure(run, [d for d in diagnostics if d.severity == "error"])
        if failure and run.direct:  # a failure no line explains: cargo's own words, as without direct runs
            return self._solo(scratch, splice, cargo=True)
        return self._verdict(splice, diagnostics + failure, run, "solo", run.elapsed_s)

    def _verdict(self, splice: Splice, diagnostics: list[Diagnostic], run: CargoRun, mode: str, elapsed: float):
        failed = run.timed_out or any(d.severity == "error" for d in diagnostics)
        return Verdict(candidate_id=splice.candidate().id, passed=not failed, diagnostics=diagnostics, oracle=self.id,
                       toolchain=self.toolchain, elapsed_s=elapsed, timed_out=run.timed_out, mode=mode,
                       sandbox=run.isolation)

    def _check_group(self, scratch: ScratchCrate, items: list[tuple[int, Job]], later: dict) -> dict[int, Verdict]:
        """Verdicts for `items` checked together. Left for `later`: those clean in a batch with
        errors (rustc drops lints after errors: checked again together), and new signatures named
        together by a function with an error (checked again in batches where none is named with another)."""
        if len(items) == 1:
            (i, job), = items
            _add(self.stats.solo_reasons, "changes a named type or an impl header" if job.alone else "alone in its group", 1)
            return {i: self._solo(scratch, job.splice)}
        self.stats.batch_runs += 1
        run = self._run(scratch, [job.splice for _, job in items], sentinel=True)
        own, contaminated, why = attribute(run, frozenset(k for k, (_, job) in enumerate(items) if job.new_header))
        if why is None and not any(is_sentinel(m) for m in run.messages):
            why = "no sentinel (rustc stopped early)"
        outside: dict[int, list[Diagnostic]] = {}
        shared: set[int] = set()
        if why is None:
            outside, shared, why = owners_outside(run, [job for _, job in items], scratch.root)
        if why is not None:
            _add(self.stats.untrusted, why, 1)
            if why.startswith("error outside"):  # the functions named where it happened, else any new header
                named = outside_names(run)
                suspects = [it for it in items if it[1].names & named] or [it for it in items if it[1].new_header]
            else:  # those that reported errors before rustc stopped
                suspects = [it for k, it in enumerate(items) if any(d.severity == "error" for d in own[k])]
            if 0 < len(suspects) < len(items):  # likely culprits alone, the others together again
                self.stats.early_stops += 1
                rest = [it for it in items if it not in suspects]
                if len(suspects) > 2:  # the culprit is likely one of them: halves, not one check each
                    mid = len(suspects) // 2
                    return {**self._check_group(scratch, suspects[:mid], later),
                            **self._check_group(scratch, suspects[mid:], later), **self._check_group(scratch, rest, later)}
                _add(self.stats.solo_reasons, "suspect", len(suspects))
                return {**{i: self._solo(scratch, job.splice) for i, job in suspects},
                        **self._check_group(scratch, rest, later)}
            self.stats.bisections += 1
            mid = len(items) // 2
            return {**self._check_group(scratch, items[:mid], later), **self._check_group(scratch, items[mid:], later)}
        share = run.elapsed_s / len(items)
        had_errors = bool(outside or shared) or any(d.severity == "error" for diags in own for d in diags)
        results = {}
        for k, (i, job) in enumerate(items):
            if k in shared:
                later["shared"].append((i, job))
            elif k in contaminated:
                _add(self.stats.solo_reasons, "contaminated", 1)
                results[i] = self._solo(scratch, job.splice)
            elif had_errors and k not in outside and not any(d.severity == "error" for d in own[k]):
                later["clean"].append((i, job))
            else:
                results[i] = self._verdict(job.splice, in_file_order(own[k]) + by_place(outside.get(k, [])), run,
                                           "batched", share)
        return results

    @staticmethod
    def _elsewhere(run: CargoRun) -> list[Diagnostic]:
        """Errors outside every splice, with their file and pre-splice line (warnings dropped)."""
        return [d for _, d in elsewhere(run)]

    def _cached(self, cand: Candidate) -> Verdict | None:
        return self.cache.lookup(self, cand) if self.cache is not None else None

    def _store(self, cand: Candidate, verdict: Verdict) -> None:
        if self.cache is not None:
            self.cache.store(self, cand, verdict)


def _add(counts: dict, key: str, n: float) -> None:
    counts[key] = counts.get(key, 0) + n

