"""Verified means compiled: a crate that passes says nothing of the code its configuration
removes. A probe check tells which declarations the compiler saw, under the default features and
under features off by default; what no feature set compiles is configured out, never verified."""
import json
from pathlib import Path

import pytest

from benchmarks.crates_bench import recheck_row
from oracles.cargo.crate import CargoCrateOracle
from oracles.cargo.manifest import checkable_manifest, offline_features
from oracles.cargo.probe import body_start
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.mutate.repair import RepairSettings, repair_rows

# A logging facade's shape: modules behind features with no dependency, off by default.
LIB = '''pub fn level(x: u32) -> u32 {
    x.min(5) + 1
}

#[cfg(feature = "kv")]
pub mod kv {
    pub fn key_len(key: &str) -> usize {
        key.trim().len() * 2
    }

    pub struct Pair { pub key: String }

    impl Pair {
        pub fn owned(&self) -> String {
            self.key.to_uppercase()
        }
    }
}

#[cfg(feature = "broken")]
pub fn broken() -> u32 {
    let s: u32 = "not a number";
    s
}

#[cfg(not(feature = "std"))]
pub fn no_std_only(a: u8) -> u8 {
    a.wrapping_add(7)
}

#[cfg(windows)]
pub fn helper(v: &[u8]) -> usize {
    v.iter().filter(|b| **b > 3).count()
}
'''


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gated") / "gated"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "gated"\nversion = "0.2.0"\nedition = "2021"\n'
                                     'license = "MIT"\n\n[features]\ndefault = ["std"]\nstd = []\nkv = []\n'
                                     'broken = []\n')
    (root / "src" / "lib.rs").write_text(LIB)
    return root


def test_features_off_by_default_are_checkable_and_turned_on_as_default_ones(gated):
    assert offline_features(gated) == ["broken", "kv"]
    text, facts = checkable_manifest(gated, features=("kv",))
    assert facts["features"] == ["default", "kv", "std"] and 'default = ["kv", "std"]' in text


def test_a_probe_is_planted_at_the_start_of_each_body():
    text = '/// impl A for B { x }\n#[inline]\nimpl A for B {\n    fn f() {}\n}'
    at = body_start(text, "impl A for B")
    assert text.encode()[at - 1:at] == b"{" and text[at:].startswith("\n    fn f")
    fn = "#[cfg(x)]\nfn é() -> u8 {\n    1\n}"
    assert fn.encode()[body_start(fn, "fn é() -> u8", "{\n    1\n}") - 1:].startswith(b"{\n    1")
    assert body_start("fn f();", "fn f()", "") is None


def test_only_what_the_compiler_saw_is_verified_each_with_its_features(gated):
    decls = extract_paths([str(gated)], ExtractOptions()).declarations
    crate = CargoCrateOracle(cache=None)
    try:
        result = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(in_crate="always"), 0, crate_oracle=crate)
    finally:
        crate.close()
    (funnel,) = result.funnel.values()
    # level (default); key_len, impl Pair and owned (with kv); broken's feature fails; no_std_only is
    # compiled only with std off; helper only on another target
    assert (funnel["eligible"], funnel["verified_crate"], funnel["configured_out"]) == (7, 4, 3), repr(funnel)
    assert [s["features"] for s in funnel["feature_sets"]] == [[], ["broken", "kv"], ["broken"], ["kv"]]
    assert [s["passed"] for s in funnel["feature_sets"]] == [True, False, False, True]
    named = {r.name for r in result.rows}
    assert {"level", "key_len", "owned"} <= named and not named & {"broken", "no_std_only", "helper"}
    out = {r.about["name"]: r.reason for r in result.rejected if "operator" not in r.about}
    assert set(out) == {"broken", "no_std_only", "helper"} and all("configured out" in v for v in out.values())
    kv_rows = [json.loads(r.model_dump_json()) for r in result.rows if r.name == "key_len"]
    recipe = kv_rows[0]["verification"]["crate"]
    assert recipe["extra_features"] == ["kv"] and recipe["features"] == ["default", "kv", "std"]
    assert all(r["broken_verification"]["passed"] is False for r in kv_rows)
    assert recheck_row(kv_rows[0], crate_dir=gated)["agree"]  # checked again with the features it records


def test_the_plan_counts_a_feature_copys_cached_verdicts_as_cached(tmp_path, capsys):
    """Mutants of `kv` code are checked in the copy with `kv` on; a plan whose items are all to do
    again (diff answers: the same mutants, other rows) has nothing left to compile, their verdicts
    cached (it priced them as new, looking them up under the default features only)."""
    from synth.cli.main import main
    gated = tmp_path / "kv_only"  # the facade's code that some feature set compiles, and nothing else
    (gated / "src").mkdir(parents=True)
    (gated / "Cargo.toml").write_text('[package]\nname = "kv_only"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                      '[features]\ndefault = []\nkv = []\n')
    (gated / "src" / "lib.rs").write_text(LIB.split('#[cfg(feature = "broken")]')[0])

    def config(out: str, extra: str = "") -> str:
        path = tmp_path / f"{out}.toml"
        path.write_text(f'[run]\nout = "{out}"\ncache_dir = "cache"\n\n[[sources]]\npath = "{gated}"\nlang = "rust"\n\n'
                        f'[lanes.repair]\nenabled = true\nin_crate = "always"\n{extra}')
        return str(path)

    def synth(*argv) -> dict:
        assert main([*argv, "--json"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    cold = synth("plan", "--config", config("a"))
    assert cold["stages"][0]["compiler_candidates"] > 0
    ran = synth("run", "--config", config("a"))
    assert ran["stages"]["repair"]["rows"] > 0
    assert any(r["name"] == "key_len" for r in _rows(tmp_path / "a"))  # some rows come from the kv copy
    fresh = synth("plan", "--config", config("b", "diff = true\n"))  # every item to do again, its verdicts cached
    assert fresh["stages"][0]["items"] == cold["stages"][0]["items"] and fresh["stages"][0]["compiler_candidates"] == 0


def _rows(out: Path) -> list[dict]:
    from synth.rows.rowfile import read_rows
    return read_rows(out / "rows" / "repair.jsonl.zst")


def test_a_task_verified_with_features_is_judged_with_them(gated):
    """A repair task of code behind a feature off by default is checked in the copy with that
    feature on: without it the declaration is configured out and anything, the broken code
    included, compiles (the judge counted every answer)."""
    from synth.tasks.judge import Judge
    from synth.tasks.split import repair_task

    decls = [d for d in extract_paths([str(gated)], ExtractOptions()).declarations if d.name == "key_len"]
    crate = CargoCrateOracle(cache=None)
    try:
        rows = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(in_crate="always"), 0,
                           crate_oracle=crate).rows
        tasks = [repair_task(json.loads(r.model_dump_json())) for r in rows]
        assert tasks and all(t.in_crate.features == ["kv"] for t in tasks)
        judge = Judge({"rust": RustOracle(OracleSettings())}, crate)
        fixed = judge.judge(tasks, [f"```rust\n{t.reference}\n```" for t in tasks])
        broken = judge.judge(tasks, [f"```rust\n{t.broken}\n```" for t in tasks])
    finally:
        crate.close()
    assert all(o.passed for o in fixed)
    assert not any(o.compiled for o in broken), [o.first_error for o in broken]
