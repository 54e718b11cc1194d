"""In-crate verification: declarations whose standalone file fails are verified inside their real
crate (a scratch copy checked with cargo offline), mutants batched with verdicts exactly as alone."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from benchmarks.crates_bench import makespan, recheck_row
from oracles.cargo.oracle import Splice
from oracles.settings import OracleSettings
from oracles.cargo.crate import CargoCrateOracle
from oracles.cargo.jobs import job_of
from oracles.cargo.manifest import checkable_manifest
from oracles.rustc.oracle import RustOracle
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.mutate.repair import RepairSettings, repair_rows

ITOA = Path("/usr/share/cargo/registry/itoa-1.0.1")

LIB = '''//! A member of a workspace whose sibling needs a crate nobody has.
pub mod shapes;

#[cfg(feature = "extra")]
pub fn extra() -> missing_opt::Thing { missing_opt::Thing }

pub fn total_area(items: &[shapes::Rect]) -> u64 {
    let mut sum = 0;
    for r in items {
        sum += crate::shapes::area(r);
    }
    sum
}
'''
SHAPES = '''use super::total_area;

pub struct Rect { pub w: u64, pub h: u64 }

pub fn area(r: &Rect) -> u64 {
    r.w * r.h
}

impl Rect {
    pub fn square(side: u64) -> Rect {
        Rect { w: side, h: side }
    }

    pub fn scaled(&self, k: u64) -> Rect {
        let w = self.w * k;
        Rect { w, h: self.h * k }
    }

    pub fn doubled_total(&self) -> u64 {
        total_area(&[self.scaled(2)])
    }
}
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "Cargo.toml").write_text('[workspace]\nmembers = ["geo", "sibling"]\n\n[workspace.package]\n'
                                     'version = "0.3.0"\nedition = "2021"\n\n[workspace.dependencies]\n'
                                     'no-such-crate-anywhere = "9.9"\n')
    geo = root / "geo"
    (geo / "src").mkdir(parents=True)
    (geo / "Cargo.toml").write_text('[package]\nname = "geo"\nversion.workspace = true\nedition.workspace = true\n\n'
                                    '[dependencies]\nmissing-opt = { version = "7", optional = true }\n\n'
                                    '[dev-dependencies]\nno-such-dev-crate = "1"\n\n'
                                    '[features]\ndefault = []\nextra = ["dep:missing-opt"]\n')
    (geo / "src" / "lib.rs").write_text(LIB)
    (geo / "src" / "shapes.rs").write_text(SHAPES)
    sibling = root / "sibling"
    (sibling / "src").mkdir(parents=True)
    (sibling / "Cargo.toml").write_text('[package]\nname = "sibling"\nversion.workspace = true\nedition = "2021"\n\n'
                                        '[dependencies]\nno-such-crate-anywhere = { workspace = true }\n')
    (sibling / "src" / "lib.rs").write_text("pub fn s() {}\n")
    return root


def test_the_workspace_itself_cannot_be_checked_offline(workspace):
    """The premise: cargo in the real member fails (its sibling's dependency is nowhere)."""
    run = subprocess.run(["cargo", "check", "--offline"], cwd=workspace / "geo", capture_output=True, text=True,
                         env={**os.environ, "CARGO_HOME": str(workspace / ".home"),
                              "CARGO_TARGET_DIR": str(workspace / ".target")})
    assert run.returncode != 0 and "no matching package" in run.stderr


def test_checkable_manifest_detaches_and_drops_what_default_features_do_not_need(workspace):
    text, facts = checkable_manifest(workspace / "geo")
    assert (facts["name"], facts["version"], facts["edition"]) == ("geo", "0.3.0", "2021")
    assert "[workspace]" in text and "missing-opt" in text  # the feature stays declared ...
    assert 'missing-opt = { version' not in text and "no-such-dev-crate" not in text  # ... pulling in nothing
    assert 'extra = []' in text


@pytest.mark.slow
def test_workspace_member_with_optional_dependency_is_extracted_mutated_and_verified(workspace, tmp_path):
    decls = extract_paths([str(workspace / "geo")], ExtractOptions()).declarations
    crate = CargoCrateOracle(cache=None)
    try:
        result = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(), 3, crate_oracle=crate)
    finally:
        crate.close()
    (funnel,) = result.funnel.values()
    # `extra` needs a dependency nobody has: no check compiles it, so it is not counted verified
    assert funnel["verified_crate"] >= 3 and funnel["configured_out"] == 1, repr(funnel)
    assert funnel["verified_standalone"] + funnel["verified_crate"] + 1 == funnel["eligible"]
    assert not any(r.name == "extra" for r in result.rows)
    crate_rows = [r for r in result.rows if r.verification.scope == "crate"]
    assert len(crate_rows) >= 5
    recipe = crate_rows[0].verification.crate
    assert (recipe["name"], recipe["version"], recipe["edition"]) == ("geo", "0.3.0", "2021")
    assert recipe["path"] in ("src/lib.rs", "src/shapes.rs")
    for row in crate_rows:  # nothing of the scratch copy leaks into a row
        assert "synth-crate-" not in row.model_dump_json()
        assert recheck_row(json.loads(row.model_dump_json()), crate_dir=workspace / "geo")["agree"]


def _mutants(crate_dir: Path, limit: int):
    from synth.mutate.repair import OperatorStats, eligible_declarations, make_mutants
    from synth.mutate.operators.rust import RUST_OPERATORS
    decls = eligible_declarations(extract_paths([str(crate_dir)], ExtractOptions()).declarations, "rust")
    stats = {op.name: OperatorStats() for op in RUST_OPERATORS}
    mutants = make_mutants(decls, RUST_OPERATORS, 1, stats)[:limit]
    return [job_of(Splice(m.decl.crate_root, m.decl.crate_path, m.decl.start_byte, m.decl.end_byte, m.broken),
                   m.decl.name, m.decl.text, m.operator) for m in mutants]


def test_batched_crate_verdicts_equal_one_check_each(workspace):
    jobs = _mutants(workspace / "geo", 24)
    # A header change that breaks a caller elsewhere (`doubled_total` calls `scaled`).
    src = (workspace / "geo" / "src" / "shapes.rs").read_text()
    start = src.index("    pub fn scaled") + 4
    end = src.index("    pub fn doubled_total") - 2
    jobs.append(job_of(Splice(str(workspace / "geo"), "src/shapes.rs", start, end,
                              "pub fn scaled(&self) -> Rect {\n        Rect { w: self.w, h: self.h }\n    }"),
                       "scaled", src[start:end], "argument_count"))
    oracle = CargoCrateOracle(cache=None)
    try:
        batched = oracle.check(jobs)
        assert oracle.stats.batch_runs >= 1 and oracle.stats.compiler_runs < len(jobs)
        solo = [oracle.check_solo(j.splice) for j in jobs]
    finally:
        oracle.close()
    for job, b, s in zip(jobs, batched, solo):
        assert b.same_result(s), (job.kind, [d.render() for d in b.diagnostics], [d.render() for d in s.diagnostics])
    elsewhere = [d for d in solo[-1].errors if d.path]
    assert elsewhere and elsewhere[0].path == "src/shapes.rs" and elsewhere[0].code == "E0061"


@pytest.mark.skipif(not ITOA.is_dir(), reason="the pinned corpus is not installed (make setup)")
def test_corpus_crate_rows_recheck_and_a_tampered_row_does_not():
    decls = extract_paths([str(ITOA)], ExtractOptions()).declarations
    crate = CargoCrateOracle(cache=None)
    try:
        result = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(in_crate="always"), 0, crate_oracle=crate)
    finally:
        crate.close()
    rows = [json.loads(r.model_dump_json()) for r in result.rows if r.verification.scope == "crate"]
    assert len(rows) >= 10
    assert recheck_row(rows[0])["agree"]
    tampered = json.loads(json.dumps(rows[0]))
    tampered["broken_verification"]["diagnostics"][0]["line"] += 1
    assert not recheck_row(tampered)["agree"]


def test_which_signature_changes_decide_who_may_share_a_batch():
    from oracles.cargo.jobs import bounds_only_dropped, changed_names
    assert bounds_only_dropped("impl<K: Hash + Eq, V> Map<K, V>", "impl<K: Eq, V> Map<K, V>")
    assert bounds_only_dropped("fn f<T: Clone>(x: T) -> T", "fn f<T>(x: T) -> T")
    assert not bounds_only_dropped("fn f() -> impl Iterator + Clone", "fn f() -> impl Iterator")  # callers clone it
    assert not bounds_only_dropped("fn f(x: &mut u8)", "fn f(x: &u8)")
    impl = "impl Rect {\n    fn a(&mut self) -> u8 { fn inner() {} 1 }\n    fn b(&self) {}\n}"
    # A method's signature in an impl is the impl's header; an item nested in a body is seen nowhere else.
    assert changed_names("Rect", impl, impl.replace("&mut self", "&self"), False) == ({"a"}, {"a"})
    assert changed_names("Rect", impl, impl.replace("fn inner()", "fn inner(x: u8)"), False) == (set(), set())
    # In a trait impl callers go through the trait: a signature there breaks only the impl itself.
    assert changed_names("Rect", impl, impl.replace("&mut self", "&self"), True) == (set(), set())
    # A dropped bound breaks no caller that compiled, but a caller spliced beside it may read differently.
    assert changed_names("f", "fn f<T: Clone>(x: T) {}", "fn f<T>(x: T) {}", False) == ({"f"}, set())
    # A binding's `mut` is the body's business; a `&mut` parameter is the caller's.
    assert changed_names("f", "fn f(mut x: u8, y: &mut u8) {}", "fn f(x: u8, y: &mut u8) {}", False) == (set(), set())
    assert changed_names("f", "fn f(x: u8, y: &mut u8) {}", "fn f(x: u8, y: &u8) {}", False) == ({"f"}, {"f"})
    # A method of a trait impl, alone: its callers see the trait's signature.
    assert changed_names("fmt", "fn fmt(&self) -> R {}", "fn fmt(&self) {}", True) == (set(), set())


def test_a_caller_replaced_in_the_batch_does_not_hide_the_error_a_new_signature_causes_there(workspace):
    """`total_area` calls `area`: a mutant of `total_area` that no longer names it, batched with a
    new return type of `area`, would hide the error `area`'s change causes in the real `total_area`."""
    geo = workspace / "geo"
    lib, shapes = (geo / "src" / "lib.rs").read_text(), (geo / "src" / "shapes.rs").read_text()
    a0 = shapes.index("pub fn area")
    a1 = shapes.index("}", a0) + 1
    t0 = lib.index("pub fn total_area")
    t1 = lib.rindex("}") + 1
    jobs = [job_of(Splice(str(geo), "src/shapes.rs", a0, a1, "pub fn area(r: &Rect) -> bool {\n    r.w * r.h\n}"),
                   "area", shapes[a0:a1], "return_type_mismatch"),
            job_of(Splice(str(geo), "src/lib.rs", t0, t1, lib[t0:t1].replace("crate::shapes::area(r)", "r.w")),
                   "total_area", lib[t0:t1], "missing_method")]
    oracle = CargoCrateOracle(cache=None)
    try:
        batched = oracle.check(jobs)
        solo = [oracle.check_solo(j.splice) for j in jobs]
    finally:
        oracle.close()
    assert [d.path for d in solo[0].errors] == [None, "src/lib.rs"]  # its own line, and its caller's
    for b, s in zip(batched, solo):
        assert b.same_result(s), ([d.render() for d in b.diagnostics], [d.render() for d in s.diagnostics])


def test_a_check_compiles_each_candidate_once(workspace, tmp_path):
    """A candidate twice in one check is compiled once; one this oracle answered before is not
    grouped again (so a stored verdict is never compiled again within a run)."""
    from oracles.cache import VerdictCache
    jobs = _mutants(workspace / "geo", 12)
    oracle = CargoCrateOracle(cache=VerdictCache(tmp_path / "verdicts"))
    try:
        twice = oracle.check(jobs[:6] + jobs[:6])
        assert oracle.stats.candidates_compiled == 6 and twice[:6] == twice[6:]
        oracle.check(jobs)  # six answered before, six new
        assert oracle.stats.candidates_compiled == 12 and oracle.cache.redone() == 0
    finally:
        oracle.close()


def test_idle_workers_help_with_a_crates_checks_and_change_no_verdict(workspace, monkeypatch):
    """A crate's groups shared between two workers, the helper in a copy of its own: the verdicts
    of one worker alone, to the diagnostic."""
    import oracles.cargo.crate as crate_module
    jobs = _mutants(workspace / "geo", 400)
    alone = CargoCrateOracle(OracleSettings(jobs=1), cache=None)
    monkeypatch.setattr(crate_module, "HELP_FROM_GROUPS", 1)  # this small crate's few groups are shared too
    helped = CargoCrateOracle(OracleSettings(jobs=2), cache=None)
    try:
        one, two = alone.check(jobs), helped.check(jobs)
        helpers = [c for c in helped.copies(helpers=True) if c not in helped.copies()]
        assert len(helpers) == 1 and helpers[0].runs > 1, "no worker helped"
        assert alone.copies(helpers=True) == alone.copies()
    finally:
        alone.close()
        helped.close()
    assert [(v.passed, v.diagnostics) for v in one] == [(v.passed, v.diagnostics) for v in two]
    assert sum(not v.passed for v in one) > len(jobs) // 2


TERMCOLOR = Path("/usr/share/cargo/registry/termcolor-1.1.2")


@pytest.mark.slow
def test_a_verdict_is_the_same_whatever_the_cache_holds(tmp_path):
    """rustc's output for one splice can depend on its company: in its batch, termcolor's
    `IoStandardStream::lock` returning `bool` loses an E0277 at a caller that it has alone. So a
    check's company is decided by the jobs alone: a run that finds the others stored (a resumed
    run) checks that job's group whole and gives the verdict the cold run gave (before, it was
    checked with whatever else was left: here alone, with the E0277)."""
    from oracles.cache import VerdictCache
    from synth.mutate.in_crate import crate_jobs
    from synth.mutate.repair import LANGS, OperatorStats, make_mutants
    if not TERMCOLOR.is_dir():
        pytest.skip("make night-corpus installs termcolor")
    operators, sites_of, apply_edit = LANGS["rust"]
    decls = [d for d in extract_paths([TERMCOLOR]).declarations if d.lang == "rust"]
    mutants = [m for m in make_mutants(decls, operators, 0, {op.name: OperatorStats() for op in operators},
                                       sites_of, apply_edit) if m.decl.crate_root]
    lock = next(i for i, m in enumerate(mutants) if m.decl.name == "lock" and m.operator == "two_errors"
                and (m.decl.self_type or "").startswith("IoStandardStream"))
    cold = CargoCrateOracle(cache=VerdictCache(tmp_path / "cold"))
    try:
        jobs = crate_jobs(mutants, cold, {})
        first = cold.check(jobs)
        alone = cold.check_solo(jobs[lock].splice)
    finally:
        cold.close()
    group = next(g for g in cold.groups(jobs[lock].splice.copy, list(range(len(jobs))), jobs) if lock in g)
    resumed_cache = VerdictCache(tmp_path / "resumed")
    resumed = CargoCrateOracle(cache=resumed_cache)
    try:  # every verdict stored but the lock mutant's (as a kill in the middle of storing its group might leave it)
        for i, job in enumerate(jobs):
            if i != lock:
                resumed_cache.store(resumed, job.splice.candidate(), first[i])
        again = resumed.check(crate_jobs(mutants, resumed, {}))
    finally:
        resumed.close()
    assert not first[lock].same_result(alone)  # the company matters for this one
    assert [v.same_result(w) for v, w in zip(again, first)] == [True] * len(first)
    # its group is checked whole again, and the stored verdicts compiled again are counted as such
    assert resumed.stats.candidates_compiled == 1 and resumed_cache.redone() == len(group) - 1 > 0


def test_a_splice_that_removes_a_named_type_is_checked_alone():
    """rustc prints `Visitor` for `serde::de::Visitor` only when no other item of the crate has that
    name: a mutant deleting a method that holds `struct Visitor;` changed its neighbours' notes."""
    body = "fn deserialize() {\n    struct Visitor;\n}"
    removes = job_of(Splice("c", "src/a.rs", 0, 40, "fn deserialize() {}"), "deserialize", body, "missing_trait_method")
    keeps = job_of(Splice("c", "src/b.rs", 0, 40, body.replace("struct", "pub struct")), "deserialize", body, "x")
    assert removes.alone and not keeps.alone
    from oracles.cargo.jobs import batch_groups
    assert batch_groups([(0, removes), (1, keeps)], 8) == [[0], [1]]
    # So is a changed impl header: `impl<W: Write> Ext for W` without its bound covers every type.
    blanket = "impl<W: io::Write + ?Sized> WriteBytesExt for W {}"
    assert job_of(Splice("c", "src/io.rs", 0, 50, blanket.replace(": io::Write + ?Sized", ": ?Sized")), "W", blanket,
                  "dropped_bound", trait_impl=True).alone
    # ... and so is one of a trait code uses without naming it (`?` goes through `From`).
    into = "impl<E: Display> From<E> for Error {}"
    assert job_of(Splice("c", "src/e.rs", 0, 40, into.replace(": Display", "")), "From<E> for Error", into,
                  "dropped_bound", trait_impl=True).alone
    # An impl for one named type changes only code naming its type, trait or methods: it is batched
    # apart from those.
    debug = "impl<K: Debug, V> fmt::Debug for Map<K, V> {\n    fn fmt(&self) {}\n}"
    widened = job_of(Splice("c", "src/m.rs", 0, 60, debug.replace("K: Debug", "K")), "fmt::Debug for Map<K, V>",
                      debug, "dropped_bound", trait_impl=True)
    assert not widened.alone and widened.names == {"Debug", "Map", "fmt"}
    user = job_of(Splice("c", "src/u.rs", 0, 30, "fn show(m: &Map) { m.fmt() }"), "show", "fn show(m: &Map) {}", "x")
    other = job_of(Splice("c", "src/o.rs", 0, 30, "fn other() { 2 }"), "other", "fn other() { 1 }", "x")
    assert batch_groups([(0, widened), (1, user), (2, other)], 8) == [[0, 2], [1]]
    # Also alone: an impl for a wrapper rustc's "no method found" help looks through, and an impl
    # whose methods a macro writes (no `fn` in its text: its names are unknown).
    boxed = "impl<T: Buf + ?Sized> Buf for Box<T> {\n    fn chunk(&self) {}\n}"
    assert job_of(Splice("c", "src/b.rs", 0, 60, boxed.replace("Buf + ", "")), "Box<T>", boxed, "dropped_bound",
                  trait_impl=True).alone
    forwarded = "impl<T: Buf> Buf for Take<T> {\n    forward!();\n}"
    assert job_of(Splice("c", "src/t.rs", 0, 60, forwarded.replace("T: Buf", "T")), "Take<T>", forwarded,
                  "dropped_bound", trait_impl=True).alone


BYTES = Path("/usr/share/cargo/registry/bytes-1.2.1")


@pytest.mark.skipif(not BYTES.is_dir(), reason="the pinned corpus is not installed (make setup)")
def test_an_error_that_reads_as_none_of_its_lines_is_not_lost_in_a_batch():
    """bytes' `get_u128` is written through a macro: the errors of its `immutable_binding` mutant
    point at none of its lines. Alone, cargo's exit says it failed; in a batch it must not pass."""
    from synth.mutate.in_crate import crate_jobs
    from synth.mutate.repair import OperatorStats, eligible_declarations, make_mutants
    from synth.mutate.operators.rust import RUST_OPERATORS
    decls = eligible_declarations(extract_paths([str(BYTES)], ExtractOptions()).declarations, "rust")
    mutants = make_mutants(decls, RUST_OPERATORS, 0,
                           {op.name: OperatorStats() for op in RUST_OPERATORS})
    macro_written = [m for m in mutants if m.decl.crate_path == "src/buf/buf_impl.rs" and m.decl.name == "get_u128"
                     and m.operator == "immutable_binding"]
    neighbours = [m for m in mutants if m.decl.crate_path == "src/bytes.rs" and m.operator == "unresolved_name"][:3]
    assert len(macro_written) == 1 and neighbours
    oracle = CargoCrateOracle(cache=None)
    try:
        jobs = crate_jobs(macro_written + neighbours, oracle, {})
        batched = oracle.check(jobs)
        assert oracle.stats.batch_runs >= 1
        solo = [oracle.check_solo(j.splice) for j in jobs]
    finally:
        oracle.close()
    assert [d.code for d in solo[0].diagnostics] == ["cargo-exit"] and not batched[0].passed
    for b, s in zip(batched, solo):
        assert b.same_result(s), ([d.render() for d in b.diagnostics], [d.render() for d in s.diagnostics])


def test_a_mutant_rejected_without_a_diagnostic_makes_no_row():
    """bytes' `get_u128` is written through a macro: its `immutable_binding` mutant fails its crate
    with cargo's exit status and no error a fix could follow. A row of it would teach a model to
    answer "cargo exited 101"; it is dropped and counted instead."""
    decls = [d for d in extract_paths([str(BYTES)], ExtractOptions()).declarations
             if d.crate_path == "src/buf/buf_impl.rs" and d.name == "get_u128"]
    oracle = CargoCrateOracle(cache=None)
    try:
        result = repair_rows(decls, RustOracle(OracleSettings(jobs=2)), RepairSettings(in_crate="always"), 0,
                             crate_oracle=oracle)
    finally:
        oracle.close()
    unexplained = [r for r in result.rejected if r.kind == "no diagnostic"]
    operators = {r.about["operator"] for r in unexplained}
    assert "immutable_binding" in operators, result.rejected
    assert {r.reason for r in unexplained} == {"rejected without a diagnostic (cargo exited 101)"}
    assert sum(s.unexplained for s in result.stats.values()) == len(unexplained)
    assert not [r for r in result.rows if r.operator in operators]


def test_a_declaration_whose_context_was_cut_is_verified_in_its_crate_without_a_standalone_try(tmp_path):
    """Alone, a function whose context stopped at its budget lacks what was cut: it goes straight
    to its crate (no standalone check spent on it), where its rows are verified."""
    links = "\n".join(f"pub struct T{i} {{ pub next: Option<Box<T{i + 1}>> }}\n" for i in range(60))
    crate = tmp_path / "chain"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "chain"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "lib.rs").write_text(
        links + "pub struct T60;\n\npub fn depth(t: &T0) -> usize {\n    let mut n = 0;\n"
        "    if t.next.is_some() {\n        n += 1;\n    }\n    n\n}\n")
    decls = [d for d in extract_paths([crate], ExtractOptions(max_context_bytes=600, jobs=1)).declarations
             if d.name == "depth"]
    assert len(decls) == 1 and decls[0].context_truncated
    standalone, oracle = RustOracle(OracleSettings(jobs=2)), CargoCrateOracle(cache=None)
    try:
        result = repair_rows(decls, standalone, RepairSettings(in_crate="fallback"), 0, crate_oracle=oracle)
    finally:
        oracle.close()
    assert result.rows and {r.verification.scope for r in result.rows} == {"crate"}
    assert standalone.stats.candidates_compiled == 0  # no original and no mutant checked alone


def test_the_side_by_side_floor_packs_the_longest_first():
    assert makespan([2, 2, 3, 2, 3], 2) == 7  # 3+2+2 | 3+2
    assert makespan([5, 1, 1], 2) == 5 and makespan([5, 1, 1], 1) == 7
