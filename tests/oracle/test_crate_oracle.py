"""Declarations from a real crate are checked in place (scratch copy, `cargo check --offline`)."""
from conftest import EXAMPLE_CRATE

from oracles.cargo.oracle import CargoOracle, Splice


def _span_of(path, needle: str) -> tuple[int, int]:
    data = path.read_bytes()
    start = data.index(needle.encode())
    return start, start + len(needle.encode())


GCD = """pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}"""


def test_example_crate_is_clean_and_its_tests_pass():
    oracle = CargoOracle()
    unchanged = Splice(str(EXAMPLE_CRATE), "src/lib.rs", 0, 0, "")
    (verdict,) = oracle.check([unchanged])
    assert verdict.passed and verdict.diagnostics == [], [d.render() for d in verdict.diagnostics]
    (tested,) = oracle.test([unchanged])
    assert tested.passed and tested.tests.total >= 10 and tested.tests.failed == 0
    assert tested.sandbox["unprivileged_user"] is (tested.sandbox["isolation"] != "none")  # candidate tests never run as root


def test_spliced_candidate_gets_its_own_coordinates_and_breaks_callers():
    path = EXAMPLE_CRATE / "src" / "stats.rs"
    start, end = _span_of(path, GCD)
    oracle = CargoOracle()
    broken = GCD.replace("        a\n", "        \"zero\"\n")
    (verdict,) = oracle.check([Splice(str(EXAMPLE_CRATE), "src/stats.rs", start, end, broken)])
    assert not verdict.passed
    (err,) = [d for d in verdict.errors if d.path is None]
    assert (err.code, err.line) == ("E0308", 3)
    # A signature change breaks `lcm` further down the same file: reported there, with its path.
    renamed = GCD.replace("pub fn gcd(a: u64, b: u64)", "pub fn gcd(a: u64)").replace("gcd(b, a % b)", "gcd(b)")
    (verdict,) = oracle.check([Splice(str(EXAMPLE_CRATE), "src/stats.rs", start, end, renamed)])
    elsewhere = [d for d in verdict.errors if d.path == "src/stats.rs"]
    assert elsewhere and elsewhere[0].code == "E0061"
    lcm_line = path.read_text().splitlines().index("pub fn lcm(a: u64, b: u64) -> u64 {") + 1
    assert lcm_line < elsewhere[0].line < lcm_line + 6
    assert not (EXAMPLE_CRATE / "target").exists()  # the real crate is never touched


def test_a_wrong_but_compiling_splice_fails_its_tests():
    path = EXAMPLE_CRATE / "src" / "stats.rs"
    start, end = _span_of(path, GCD)
    wrong = GCD.replace("gcd(b, a % b)", "a + b")
    (verdict,) = CargoOracle().test([Splice(str(EXAMPLE_CRATE), "src/stats.rs", start, end, wrong)])
    assert not verdict.passed and verdict.tests.failed >= 1 and verdict.tests.passed >= 10
    assert not [d for d in verdict.diagnostics if d.severity == "error"]  # it compiles; the tests catch it


def test_a_cached_verdict_is_counted_like_every_oracle_s(tmp_path):
    """The verdict cache counts its hits in the oracle's counters, the in-place cargo oracle's too
    (`synth demo` checks the example crate this way on every run after its first)."""
    from oracles.cache import VerdictCache
    unchanged = Splice(str(EXAMPLE_CRATE), "src/lib.rs", 0, 0, "")
    CargoOracle(cache=VerdictCache(tmp_path)).check([unchanged])
    again = CargoOracle(cache=VerdictCache(tmp_path))
    (verdict,) = again.check([unchanged])
    assert verdict.mode == "cache" and again.stats.cache_hits == 1 and again.stats.compiler_runs == 0


def test_verdict_keys_made_together_hash_each_crate_once_and_still_see_a_change(tmp_path):
    from oracles import verdict
    crate = tmp_path / "k"
    (crate / "src").mkdir(parents=True)
    (crate / "src" / "lib.rs").write_text("pub fn one() -> u8 { 1 }\n")
    splices = [Splice(str(crate), "src/lib.rs", 0, 4, f"pub fn one() -> u8 {{ {n} }}") for n in range(5)]
    walks = []
    real = verdict.crate_files
    verdict.crate_files = lambda root: walks.append(root) or real(root)
    try:
        together = verdict.splice_candidates(splices)
    finally:
        verdict.crate_files = real
    assert len(walks) == 1  # one look at the crate for five keys
    alone = [Splice(s.crate_dir, s.path, s.start_byte, s.end_byte, s.text).candidate() for s in splices]
    assert [c.id for c in together] == [c.id for c in alone] and len({c.id for c in together}) == 5
    (crate / "src" / "lib.rs").write_text("pub fn one() -> u8 { 2 }\n")  # the crate changed: other keys
    again = verdict.splice_candidates([Splice(s.crate_dir, s.path, s.start_byte, s.end_byte, s.text) for s in splices])
    assert not {c.id for c in again} & {c.id for c in together}
