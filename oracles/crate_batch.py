"""In-crate verification, batched: many splices (each over a different function) in one
`cargo check` of a scratch copy of the crate, verdicts exactly those of checking each alone.

A splice's verdict carries the diagnostics on its own lines (positioned in the splice's text) and
any error elsewhere in the crate (with its path and the file's own line). Warnings elsewhere are
the crate's, not the splice's, and are left out. The batch is trusted only when it can be read
exactly, else it is split in two (bisection) down to single checks:
- a sentinel with a known late-phase warning must show up (rustc ran every phase);
- no error outside every splice (it could be any splice's callers);
- no diagnostic that points into another splice, or names a place in a spliced file;
- splices that could see each other (one names the function another replaced) share no batch;
- clean splices of a batch with errors are checked again together (rustc drops lints after errors).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .cache import CACHE_LOGIC_VERSION, VerdictCache, verdict_key
from .crate import Splice
from .crate_scratch import RUSTFLAGS, CargoRun, ScratchCrate, open_scratch
from .rust import in_file_order
from .rustc_diagnostics import _all_spans, _all_text, is_summary, locate, spanless
from .sandbox import Sandbox
from .toolchain import find_binary, probe_version, resolve_rustup_proxy
from .verdict import Candidate, Diagnostic, Verdict

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class CrateBatchStats:
    compiler_runs: int = 0
    candidates_compiled: int = 0  # splices not answered by the cache
    batch_runs: int = 0
    solo_runs: int = 0
    bisections: int = 0
    early_stops: int = 0  # untrusted batches split by their likely culprits instead of in halves
    clean_rechecks: int = 0
    cache_hits: int = 0
    elapsed_s: float = 0.0  # wall time of all cargo runs
    untrusted: dict[str, int] = field(default_factory=dict)
    solo_reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """One splice to check, and the names that decide which others it may share a check with."""

    splice: Splice
    name: str  # the function the splice replaces
    idents: frozenset[str]  # every name its text uses
    kind: str = ""  # splices of one kind (e.g. one mutation operator) stop rustc in the same phase
    new_header: bool = False  # the text before the body changed: callers elsewhere may break


def _header(text: str) -> str:
    """The text before the body, without doc comments and attributes (doc examples hold braces)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "#[", "#!")))
    return " ".join(code.split("{", 1)[0].split())


def job_of(splice: Splice, name: str, original: str = "", kind: str = "") -> Job:
    """`original`: the text the splice replaces (to tell whether the header changes)."""
    return Job(splice, name, frozenset(IDENT.findall(splice.text)), kind,
               bool(original) and _header(original) != _header(splice.text))


class CrateBatchOracle:
    id = "cargo-crate"

    def __init__(self, sandbox: Sandbox | None = None, cache: VerdictCache | None = None, batch_size: int = 64,
                 timeout_s: float = 300.0, cargo: str = "cargo"):
        self.sandbox = sandbox or Sandbox()
        self.cache = cache
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.stats = CrateBatchStats()
        self.cargo = resolve_rustup_proxy(find_binary(cargo, "[oracles.rust] cargo to its path"), "cargo")
        self.rustc = str(Path(self.cargo).with_name("rustc"))
        self.toolchain = probe_version(self.rustc, ["-V"], cache) + " / " + probe_version(self.cargo, ["-V"], cache)
        self._scratch: dict[str, ScratchCrate | str] = {}
        self._sentinel_ok: dict[str, bool] = {}
        self._originals: dict[str, Verdict] = {}  # one check of each crate as it is
        self._callers_broken: dict[str, tuple[int, int]] = {}  # kind -> (solo checks, with errors elsewhere)

    @property
    def flags(self) -> dict:
        return {"rustflags": RUSTFLAGS, "logic": CACHE_LOGIC_VERSION, "scope": "crate"}

    def close(self) -> None:
        for scratch in self._scratch.values():
            if isinstance(scratch, ScratchCrate):
                scratch.close()
        self._scratch = {}

    # -- crates ---------------------------------------------------------------------------------

    def scratch(self, crate_dir: str) -> ScratchCrate | str:
        """The crate's scratch copy, or why it cannot have one."""
        if crate_dir not in self._scratch:
            self._scratch[crate_dir] = open_scratch(Path(crate_dir), self.cargo, self.rustc, self.sandbox,
                                                    self.timeout_s)
        return self._scratch[crate_dir]

    def original(self, crate_dir: str) -> Verdict:
        """The crate as it is: passed means every declaration in it compiles in its real context."""
        scratch = self.scratch(crate_dir)
        if isinstance(scratch, str):
            return Verdict(candidate_id="", passed=False, oracle=self.id, toolchain=self.toolchain,
                           diagnostics=[Diagnostic(code="crate-manifest", severity="error", message=scratch)])
        if crate_dir in self._originals:
            return self._originals[crate_dir]
        cand = Candidate.of("", f"crate:{scratch.hash}:original")
        hit = self._cached(cand)
        if hit is not None:
            self._sentinel_ok[crate_dir] = not hit.sandbox.get("no_sentinel", True)
            self._originals[crate_dir] = hit
            return hit
        run = self._run(scratch, [], sentinel=True)
        self._sentinel_ok[crate_dir] = any(_is_sentinel(m) for m in run.messages)
        errors = [d for d in self._elsewhere(run, solo=True) if d.severity == "error"]
        errors += _cargo_failure(run, errors)
        verdict = Verdict(candidate_id=cand.id, passed=not errors and run.returncode == 0, diagnostics=errors,
                          oracle=self.id, toolchain=self.toolchain, elapsed_s=run.elapsed_s, timed_out=run.timed_out,
                          mode="crate", sandbox={**run.isolation, "no_sentinel": not self._sentinel_ok[crate_dir]})
        self._store(cand, verdict)
        self._originals[crate_dir] = verdict
        return verdict

    def facts(self, crate_dir: str) -> dict:
        scratch = self.scratch(crate_dir)
        return {} if isinstance(scratch, str) else {**scratch.facts, "crate_hash": scratch.hash}

    # -- splices --------------------------------------------------------------------------------

    def check(self, jobs: list[Job]) -> list[Verdict]:
        """One verdict per job, in order: batched per crate where that is exact."""
        verdicts: dict[int, Verdict] = {}
        todo: dict[str, list[int]] = {}
        for i, job in enumerate(jobs):
            hit = self._cached(job.splice.candidate())
            if hit is not None:
                verdicts[i] = hit
            else:
                todo.setdefault(job.splice.crate_dir, []).append(i)
        self.stats.candidates_compiled += sum(len(v) for v in todo.values())
        for crate_dir, indices in todo.items():
            if self.original(crate_dir).passed is False or not self._sentinel_ok.get(crate_dir):
                groups = [[i] for i in indices]  # no sentinel, no batch: checked alone
            else:
                groups = _groups([(i, jobs[i]) for i in indices], self.batch_size)
            for group in groups:
                verdicts.update(self._check_group(self.scratch(crate_dir), [(i, jobs[i]) for i in group]))
        for i, job in enumerate(jobs):
            if verdicts[i].mode != "cache":
                self._store(job.splice.candidate(), verdicts[i])
        return [verdicts[i] for i in range(len(jobs))]

    def check_solo(self, splice: Splice) -> Verdict:
        """The reference: this splice alone in the crate."""
        return self._solo(self.scratch(splice.crate_dir), splice)

    # -- internals ------------------------------------------------------------------------------

    def _run(self, scratch: ScratchCrate, splices: list[Splice], sentinel: bool) -> CargoRun:
        self.stats.compiler_runs += 1
        run = scratch.check(splices, sentinel=sentinel)
        self.stats.elapsed_s += run.elapsed_s
        return run

    def _breaks_callers(self, kind: str) -> bool:
        seen, broke = self._callers_broken.get(kind, (0, 0))
        return seen >= 3 and broke * 2 >= seen

    def _solo(self, scratch: ScratchCrate, splice: Splice, kind: str = "") -> Verdict:
        self.stats.solo_runs += 1
        run = self._run(scratch, [splice], sentinel=False)
        own, _, _ = self._attribute(run)
        elsewhere = self._elsewhere(run, solo=True)
        seen, broke = self._callers_broken.get(kind, (0, 0))
        self._callers_broken[kind] = (seen + 1, broke + bool(elsewhere))
        diagnostics = in_file_order(own[0]) + sorted(elsewhere, key=lambda d: (d.path or "", d.line or 0, d.column or 0))
        diagnostics += _cargo_failure(run, [d for d in diagnostics if d.severity == "error"])
        return self._verdict(splice, diagnostics, run, "solo", run.elapsed_s)

    def _verdict(self, splice: Splice, diagnostics: list[Diagnostic], run: CargoRun, mode: str, elapsed: float):
        failed = run.timed_out or any(d.severity == "error" for d in diagnostics)
        return Verdict(candidate_id=splice.candidate().id, passed=not failed, diagnostics=diagnostics, oracle=self.id,
                       toolchain=self.toolchain, elapsed_s=elapsed, timed_out=run.timed_out, mode=mode,
                       sandbox=run.isolation)

    def _check_group(self, scratch: ScratchCrate, items: list[tuple[int, Job]]) -> dict[int, Verdict]:
        breakers = [it for it in items if it[1].new_header and self._breaks_callers(it[1].kind)]
        if len(items) == 1 or breakers:  # measured: this kind of header change breaks callers elsewhere
            rest = [it for it in items if it not in breakers] if len(items) > 1 else []
            why = "breaks callers (measured for its kind)" if breakers else "alone in its group"
            self.stats.solo_reasons[why] = self.stats.solo_reasons.get(why, 0) + len(items) - len(rest)
            done = {i: self._solo(scratch, job.splice, job.kind) for i, job in items if (i, job) not in rest}
            return {**done, **(self._check_group(scratch, rest) if rest else {})}
        self.stats.batch_runs += 1
        run = self._run(scratch, [job.splice for _, job in items], sentinel=True)
        own, contaminated, why = self._attribute(run)
        if why is None and not any(_is_sentinel(m) for m in run.messages):
            why = "no sentinel (rustc stopped early)"
        if why is None and any(d.severity == "error" for d in self._elsewhere(run, solo=False)):
            why = "error outside every splice"
        if why is not None:
            self.stats.untrusted[why] = self.stats.untrusted.get(why, 0) + 1
            if why.startswith("error outside"):  # the functions named where it happened, else any new header
                named = _outside_names(run)
                suspects = [it for it in items if it[1].name in named] or [it for it in items if it[1].new_header]
            else:  # those that reported errors before rustc stopped
                suspects = [it for k, it in enumerate(items) if any(d.severity == "error" for d in own[k])]
            if 0 < len(suspects) < len(items):  # likely culprits alone, the others together again
                self.stats.early_stops += 1
                self.stats.solo_reasons["suspect"] = self.stats.solo_reasons.get("suspect", 0) + len(suspects)
                rest = [it for it in items if it not in suspects]
                return {**{i: self._solo(scratch, job.splice, job.kind) for i, job in suspects},
                        **self._check_group(scratch, rest)}
            self.stats.bisections += 1
            mid = len(items) // 2
            return {**self._check_group(scratch, items[:mid]), **self._check_group(scratch, items[mid:])}
        share = run.elapsed_s / len(items)
        had_errors = any(d.severity == "error" for diags in own for d in diags)
        results, clean = {}, []
        for k, (i, job) in enumerate(items):
            if k in contaminated:
                self.stats.solo_reasons["contaminated"] = self.stats.solo_reasons.get("contaminated", 0) + 1
                results[i] = self._solo(scratch, job.splice, job.kind)
            elif had_errors and not any(d.severity == "error" for d in own[k]):
                clean.append((i, job))
            else:
                results[i] = self._verdict(job.splice, in_file_order(own[k]), run, "batched", share)
        if clean:
            self.stats.clean_rechecks += 1
            results.update(self._check_group(scratch, clean))
        return results

    def _attribute(self, run: CargoRun) -> tuple[list[list[Diagnostic]], set[int], str | None]:
        """Each splice's own diagnostics (in its coordinates), the splices whose diagnostics read
        differently in company, and why the whole run cannot be read (None: it can)."""
        own: list[list[Diagnostic]] = [[] for _ in run.sites]
        contaminated: set[int] = set()
        spliced = {s.path for s in run.sites}
        for raw in run.messages:
            if is_summary(raw) or raw.get("level") not in ("error", "warning") or _is_sentinel(raw):
                continue
            k = _owner(raw, run.sites)
            if k is None:
                continue
            site = run.sites[k]
            located = locate(raw, site.path, [site.region])
            if located.diagnostic is None:
                continue
            others = [s for j, s in enumerate(run.sites) if j != k]
            if any(sp.get("file_name") == o.path and o.region.first <= sp.get("line_start", 0) <= o.region.last
                   for sp in _all_spans(raw) for o in others) or _names_a_place(raw, spliced, site):
                contaminated.add(k)
            own[k].append(located.diagnostic)
        return own, contaminated, None if run.returncode is not None else "timed out"

    def _elsewhere(self, run: CargoRun, solo: bool) -> list[Diagnostic]:
        """Errors outside every splice, with their file and pre-splice line (warnings dropped)."""
        out = []
        for raw in run.messages:
            if is_summary(raw) or raw.get("level") != "error" or _owner(raw, run.sites) is not None:
                continue
            primary = [s for s in raw.get("spans", []) if s.get("is_primary")]
            if not primary:
                out.append(spanless(raw))
                continue
            span = primary[0]
            line = span["line_start"]
            for site in run.sites:  # back to the file's own numbering
                if site.path == span["file_name"] and line > site.region.last:
                    line -= site.shift
            d = spanless(raw).model_copy(update={"path": span["file_name"], "line": line,
                                                 "column": span["column_start"], "label": span.get("label")})
            out.append(d)
        return out

    def _cached(self, cand: Candidate) -> Verdict | None:
        if self.cache is None:
            return None
        hit = self.cache.get(verdict_key(cand, self.id, self.toolchain, self.flags))
        if hit is not None:
            self.stats.cache_hits += 1
            return hit.model_copy(update={"candidate_id": cand.id, "mode": "cache"})
        return None

    def _store(self, cand: Candidate, verdict: Verdict) -> None:
        if self.cache is not None:
            self.cache.put(verdict_key(cand, self.id, self.toolchain, self.flags), verdict)


def _is_sentinel(raw: dict) -> bool:
    return any("__synth_sentinel" in t.get("text", "") for sp in raw.get("spans", []) for t in sp.get("text") or [])


def _owner(raw: dict, sites) -> int | None:
    """The splice holding the diagnostic's primary span (followed out of macros), if exactly one."""
    owners = set()
    for span in raw.get("spans", []):
        if not span.get("is_primary"):
            continue
        while span is not None:
            hit = [k for k, s in enumerate(sites) if s.path == span.get("file_name")
                   and s.region.first <= span["line_start"] <= s.region.last]
            if hit:
                owners.add(hit[0])
                break
            expansion = span.get("expansion")
            span = expansion.get("span") if expansion else None
    return owners.pop() if len(owners) == 1 else None


def _outside_names(run: CargoRun) -> set[str]:
    """The names on the source lines of errors outside every splice (a broken call names its callee)."""
    names = set()
    for raw in run.messages:
        if raw.get("level") == "error" and _owner(raw, run.sites) is None:
            for span in raw.get("spans", []):
                for line in span.get("text") or []:
                    names.update(IDENT.findall(line.get("text", "")))
    return names


def _names_a_place(raw: dict, spliced: set[str], site) -> bool:
    """A type name with a place in a spliced file (`{closure@src/a.rs:40:9}`) outside the splice's
    own lines: its line number depends on the other splices."""
    for path in spliced:
        for m in re.finditer("@" + re.escape(path) + r":(\d+):", "\n".join(_all_text(raw))):
            if path != site.path or int(m.group(1)) not in site.region:
                return True
    return False


def _cargo_failure(run: CargoRun, errors: list[Diagnostic]) -> list[Diagnostic]:
    if run.timed_out or errors or run.returncode in (0, None):
        return []
    tail = [line for line in run.stderr.strip().splitlines() if line.strip()][-3:]
    return [Diagnostic(code="cargo-exit", severity="error", message=f"cargo exited {run.returncode}: " + " | ".join(tail))]


def _groups(items: list[tuple[int, Job]], size: int) -> list[list[int]]:
    """Batches in which no two splices overlap, share a function, or name each other's function."""
    batches: list[tuple[list[int], list[Job]]] = []
    for i, job in sorted(items, key=lambda it: (it[1].kind, it[0])):
        for members, jobs in batches:
            if len(members) < size and jobs[0].kind == job.kind and not any(_conflict(job, other) for other in jobs):
                members.append(i)
                jobs.append(job)
                break
        else:
            batches.append(([i], [job]))
    return [members for members, _ in batches]


def _conflict(a: Job, b: Job) -> bool:
    sa, sb = a.splice, b.splice
    if sa.path == sb.path and sa.start_byte < sb.end_byte and sb.start_byte < sa.end_byte:
        return True
    # A body-only change is invisible to other functions; a new header may break its callers.
    return (a.new_header and a.name in b.idents) or (b.new_header and b.name in a.idents)
