"""The doc lane's in-crate fallback: a documented function whose standalone file fails is verified in
its real crate (cargo, offline) and becomes an SFT row that shows the same standalone context, and
never a task (a task's check is standalone, and could not confirm its answer)."""
from pathlib import Path

import pytest

from oracles.cargo.crate import CargoCrateOracle
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.tasks.split import split_rows, task_of
from synth.doctasks.documented import doc_lane
from synth.extract.extract import ExtractOptions, extract_paths

LIB = '''pub mod shapes;

/// Sum of the areas of the rectangles.
pub fn total_area(items: &[shapes::Rect]) -> u64 {
    let mut sum = 0;
    for r in items {
        sum += crate::shapes::area(r);
    }
    sum
}

/// Twice the number.
pub fn twice(x: u64) -> u64 {
    x * 2
}
'''
SHAPES = '''pub struct Rect { pub w: u64, pub h: u64 }

/// The area of a rectangle.
pub fn area(r: &Rect) -> u64 {
    r.w * r.h
}
'''


def _crate(root: Path, broken: bool = False) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "geo"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "lib.rs").write_text(LIB + ("\npub fn broken() -> u64 { \"no\" }\n" if broken else ""))
    (root / "src" / "shapes.rs").write_text(SHAPES)
    return root


@pytest.fixture(scope="module")
def oracles():
    crate = CargoCrateOracle(cache=None)
    yield RustOracle(OracleSettings()), crate
    crate.close()


def _by_name(rows):
    return {r.must_define[0]: r.model_dump(mode="json") for r in rows}


def test_a_function_failing_standalone_is_verified_in_its_crate(tmp_path, oracles):
    standalone, crate = oracles
    decls = extract_paths([str(_crate(tmp_path / "geo"))], ExtractOptions(jobs=1)).declarations
    alone_rows, alone_rejected = doc_lane(decls, standalone, seed=0)
    assert "total_area" not in _by_name(alone_rows)  # the premise: its standalone file fails
    assert any(r.about["name"] == "total_area" for r in alone_rejected)
    rows = _by_name(doc_lane(decls, standalone, seed=0, crate_oracle=crate)[0])
    row = rows["total_area"]
    assert row["verification"]["scope"] == "crate" and row["verification"]["passed"]
    assert row["verification"]["crate"]["name"] == "geo" and row["verification"]["crate"]["path"] == "src/lib.rs"
    assert row["context"].strip() and row["context"].strip() in row["prompt"]  # the context it was verified with
    assert "synth-crate-" not in str(row)  # nothing of the scratch copy leaks into a row
    assert task_of(row) is None  # SFT data only
    assert rows["twice"]["verification"]["scope"] == "standalone" and task_of(rows["twice"]) is not None
    split = split_rows(list(rows.values()), {"geo"}, rl_share=0.5, seed=0)  # held out: still no task from it
    assert [t.must_define for t in split.heldout_tasks if "total_area" in t.must_define] == []


def test_a_crate_that_does_not_compile_verifies_nothing(tmp_path, oracles):
    standalone, crate = oracles
    decls = extract_paths([str(_crate(tmp_path / "geo", broken=True))], ExtractOptions(jobs=1)).declarations
    rows, rejected = doc_lane(decls, standalone, seed=0, crate_oracle=crate)
    assert "total_area" not in _by_name(rows)
    (reason,) = [r.reason for r in rejected if r.about["name"] == "total_area"]
    assert "nor in its crate: crate does not compile" in reason
