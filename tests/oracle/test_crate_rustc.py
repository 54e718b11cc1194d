"""A crate's later checks run the rustc command cargo ran for it (oracles/cargo/direct.py), and
crates are checked side by side (oracles/turns.py): the verdicts are exactly those of cargo,
one crate at a time."""
import json
import re
import threading
import time
from pathlib import Path

import pytest

from conftest import EXAMPLE_CRATE
from oracles.cargo.crate import CargoCrateOracle
from oracles.isolation.sandbox import Sandbox
from oracles.settings import OracleSettings
from oracles.turns import Turns
from oracles.verdict import Splice
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.mutate.in_crate import crate_jobs, crate_originals
from synth.mutate.repair import OperatorStats, eligible_declarations, make_mutants
from synth.mutate.operators.rust import RUST_OPERATORS

BUILD = '''fn flag_name(prefix: &str) -> String {
    let mut name = String::from(prefix);
    name.push_str("_flag");
    name
}

fn main() {
    println!("cargo:rustc-cfg={}", flag_name("synth"));
    println!("cargo:rustc-env=GREETING=hello");
}
'''
LIB = '''#[cfg(synth_flag)]
pub fn greeting() -> &'static str {
    env!("GREETING")
}

pub fn version_len() -> usize {
    let v = env!("CARGO_PKG_VERSION");
    v.len() + greeting().len()
}
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A crate whose build script sets a cfg and an environment variable its code needs."""
    root = tmp_path_factory.mktemp("built") / "built"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "built"\nversion = "0.4.2"\nedition = "2021"\n')
    (root / "build.rs").write_text(BUILD)
    (root / "src" / "lib.rs").write_text(LIB)
    return root


def _mutants(crates: list[Path]):
    decls = eligible_declarations(extract_paths([str(c) for c in crates], ExtractOptions(jobs=1)).declarations, "rust")
    stats = {op.name: OperatorStats() for op in RUST_OPERATORS}
    return make_mutants(decls, RUST_OPERATORS, 2, stats)


@pytest.mark.slow
def test_direct_rustc_side_by_side_gives_cargos_verdicts(built):
    mutants = _mutants([EXAMPLE_CRATE, built])
    assert any(m.decl.crate_path == "build.rs" for m in mutants)
    verdicts, copies = {}, {}
    for direct, workers in ((True, 2), (False, 1)):
        oracle = CargoCrateOracle(OracleSettings(jobs=workers), cache=None, direct=direct)
        try:
            verdicts[direct] = oracle.check(crate_jobs(mutants, oracle, {}))
            copies[direct] = {c.source.name: (c.command is not None, c.direct_runs, c.runs) for c in oracle.copies()}
        finally:
            oracle.close()
    assert all(a.same_result(b) for a, b in zip(verdicts[True], verdicts[False]))
    assert sum(not v.passed for v in verdicts[True]) >= 10
    # rustc ran directly for most checks; never without a direct run's command, nor in the cargo oracle
    assert all(has and 0 < n < runs for has, n, runs in copies[True].values()), copies
    assert all(not has and n == 0 for has, n, _ in copies[False].values())


def test_the_build_scripts_cfg_and_environment_reach_direct_runs_and_its_own_splice_goes_to_cargo(built):
    oracle = CargoCrateOracle(cache=None)
    try:
        assert oracle.original(str(built)).passed
        (same,) = oracle.check(crate_jobs_of([Splice(str(built), "src/lib.rs", 0, 0, "")], oracle))
        assert same.passed and oracle.copies()[0].direct_runs == 1  # `synth_flag` and GREETING as cargo set them
        text = (built / "build.rs").read_text()
        broken = Splice(str(built), "build.rs", 0, len(text), text.replace("fn main() {", "fn main() {\n    let _x: u8 = \"no\";"))
        before = oracle.copies()[0].direct_runs
        (verdict,) = oracle.check(crate_jobs_of([broken], oracle))
        assert not verdict.passed and verdict.errors[0].code == "E0308"
        assert oracle.copies()[0].direct_runs == before
    finally:
        oracle.close()


def crate_jobs_of(splices, oracle):
    return [oracle.job(s, "main", "", "test") for s in splices]


def test_turns_let_compilers_overlap_but_never_two_threads_work_at_once():
    turns, inside, most = Turns(), [0], [0]
    guard = threading.Lock()

    def work(item):
        for _ in range(2):
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)  # the oracle's own work: in its turn
            with guard:
                inside[0] -= 1
            with turns.compiling():
                time.sleep(0.3)  # a compiler's time: the turn given up
        return item * 2

    start = time.monotonic()
    assert turns.map(work, [1, 2, 3], workers=3) == [2, 4, 6]
    assert most[0] == 1  # nobody else worked while one held the turn
    assert time.monotonic() - start < 1.5  # one after another: 3 x 2 x 0.32 s


class _CountingSandbox(Sandbox):
    """The real sandbox, counting the compilers running at once and the order crates start in."""

    def __init__(self):
        super().__init__()
        self.guard, self.now, self.most, self.packages = threading.Lock(), 0, 0, []

    def run(self, argv, cwd, *args, **kwargs):
        with self.guard:
            self.now += 1
            self.most = max(self.most, self.now)
            self.packages.append(re.search(r'name = "([^"]+)"', (Path(cwd) / "Cargo.toml").read_text()).group(1))
        try:
            return super().run(argv, cwd, *args, **kwargs)
        finally:
            with self.guard:
                self.now -= 1


def test_crates_are_verified_side_by_side_with_the_findings_of_one_at_a_time(built):
    decls = eligible_declarations(extract_paths([str(EXAMPLE_CRATE), str(built)], ExtractOptions(jobs=1)).declarations,
                                  "rust")
    found, most = {}, {}
    for workers in (1, 2):
        sandbox = _CountingSandbox()
        oracle = CargoCrateOracle(OracleSettings(jobs=workers), sandbox=sandbox, cache=None)
        try:
            out = crate_originals(decls, oracle)
        finally:
            oracle.close()
        found[workers] = json.dumps([list(out.verified), out.why_not, out.features, out.feature_sets])
        most[workers] = sandbox.most
    assert len(json.loads(found[1])[0]) >= 5
    assert found[2] == found[1]  # the same declarations, reasons and feature sets, in the same order
    assert most == {1: 1, 2: 2}  # the two crates' checks overlapped


def test_the_copy_with_most_to_check_starts_first(built):
    mutants = _mutants([EXAMPLE_CRATE, built])
    few = [m for m in mutants if m.decl.crate_root == str(built)][:1]
    many = [m for m in mutants if m.decl.crate_root == str(EXAMPLE_CRATE)][:3]
    assert len(few) == 1 and len(many) == 3
    sandbox = _CountingSandbox()
    oracle = CargoCrateOracle(OracleSettings(jobs=1), sandbox=sandbox, cache=None)
    try:
        oracle.check(crate_jobs(few + many, oracle, {}))  # listed with the smaller crate first
    finally:
        oracle.close()
    assert sandbox.packages[0] != "built" and sandbox.packages[-1] == "built", sandbox.packages


def test_every_check_starts_from_the_incremental_state_of_the_crate_as_it_is():
    """rustc's words can depend on the incremental state a check starts from (a query cycle read
    as E0391 after some histories, E0121 and E0283 after others: one verdict of rand differed
    between two schedules). So each check starts from the state the copy's first check left, and
    a copy asked first for anything else checks the crate as it is first."""
    stats = EXAMPLE_CRATE / "src" / "stats.rs"
    text = stats.read_text()
    start = text.index("pub fn mean(")
    end = text.index("\n}\n", start) + 2
    broken = Splice(str(EXAMPLE_CRATE), "src/stats.rs", len(text[:start].encode()), len(text[:end].encode()),
                    text[start:end].replace("{\n", "{\n    let _x: u8 = 1;\n", 1))
    oracle = CargoCrateOracle(cache=None)
    try:
        seen = []  # the sessions in the incremental folder each time a compiler starts
        copy = oracle.scratch(str(EXAMPLE_CRATE))
        run = copy.sandbox.run

        def watched(*args, **kwargs):
            seen.append(sorted(p.name for p in copy.incremental.glob("*/s-*") if p.is_dir()))
            return run(*args, **kwargs)
        copy.sandbox.run = watched
        oracle.check_solo(broken)  # asked first for a splice: the crate as it is is checked before it
        assert copy.runs == 2 and (copy.dir / "incremental-start").is_dir()
        oracle.check_solo(broken)
        oracle.check_solo(broken)
        start_state = sorted(p.name for p in (copy.dir / "incremental-start").glob("*/s-*") if p.is_dir())
        assert start_state and seen[-1] == seen[-2] == start_state, (seen, start_state)
    finally:
        oracle.close()
