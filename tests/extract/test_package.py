"""Every row says where its code comes from: crate, version and licence (SPDX), read from the crate
(Debian's registry: crates we did not write), and assembly keeps only the licences asked for."""
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import EXAMPLE_CRATE

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.assemble.mix import Mix, Source
from synth.assemble.snapshot import assemble
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.package import UNKNOWN, crate_package, license_from_files, permitted, spdx
from synth.lanes.base import LaneOutput
from synth.mutate.repair import RepairSettings, repair_rows
from synth.pipeline.run import write_outputs

REGISTRY = Path("/usr/share/cargo/registry")
MEMCHR = REGISTRY / "memchr-2.5.0"


def test_every_corpus_crate_has_a_name_version_and_licence():
    crates = sorted(p for p in REGISTRY.iterdir() if (p / "Cargo.toml").exists())
    assert len(crates) >= 14
    packages = {p.name: crate_package(p) for p in crates}
    assert all(f"{pkg.name}-{pkg.version}" == folder for folder, pkg in packages.items())
    assert [f for f, pkg in packages.items() if pkg.license == UNKNOWN] == []
    assert packages["memchr-2.5.0"].license == "Unlicense OR MIT"  # Cargo.toml says `Unlicense/MIT`
    assert "/" not in "".join(pkg.license for pkg in packages.values())


def test_a_crate_without_a_licence_key_is_read_from_its_licence_files(tmp_path):
    crate = tmp_path / "nokey"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "nokey"\nversion = "0.3.1"\n')
    assert crate_package(crate).license == UNKNOWN  # no key, no file
    shutil.copy(MEMCHR / "LICENSE-MIT", crate / "LICENSE-MIT")
    shutil.copy(MEMCHR / "UNLICENSE", crate / "UNLICENSE")
    assert license_from_files(crate) == "MIT OR Unlicense"
    (crate / "COPYING").write_text("This project is dual-licensed; see the other files.\n")  # recognised as nothing
    assert license_from_files(crate) == "MIT OR Unlicense"
    assert spdx("MIT/Apache-2.0") == "MIT OR Apache-2.0" and spdx("MIT") == "MIT"


@pytest.mark.parametrize("expression, accepted, expected", [
    ("MIT OR Apache-2.0", ["MIT"], True),
    ("MIT OR Apache-2.0", ["BSD-3-Clause"], False),
    ("GPL-3.0", ["MIT", "Apache-2.0"], False),
    ("(MIT AND BSD-3-Clause)", ["MIT"], False),
    ("(MIT AND BSD-3-Clause) OR GPL-3.0", ["MIT", "BSD-3-Clause"], True),
    (None, ["MIT"], False),
    (None, ["unknown"], True),
])
def test_a_licence_expression_is_permitted_by_one_alternative_whole(expression, accepted, expected):
    assert permitted(expression, accepted) is expected


def test_repair_rows_carry_their_crate_and_assembly_keeps_only_accepted_licences(tmp_path):
    decls = extract_paths([MEMCHR / "src" / "memchr" / "naive.rs", EXAMPLE_CRATE],
                          ExtractOptions(jobs=1)).declarations
    result = repair_rows(decls, RustOracle(OracleSettings(jobs=2)), RepairSettings(), 0)
    rows = result.rows
    sources = Counter((r.provenance.source_name, r.provenance.source_version, r.provenance.license) for r in rows)
    assert set(sources) == {("memchr", "2.5.0", "Unlicense OR MIT"), ("synth_examples", "0.1.0", UNKNOWN)}, sources
    write_outputs(tmp_path / "run", {"repair": LaneOutput("repair", rows=result.rows, rejected=result.rejected)})
    mix = Mix(sources=[Source(name="repair", path=str(tmp_path / "run"))], val_share={"default": 0.2}, licenses=["MIT"])
    snap = assemble(mix)
    kept = snap.train + snap.val
    assert kept and {r.provenance.source_name for r in kept} == {"memchr"}
    dropped = sources[("synth_examples", "0.1.0", UNKNOWN)]
    assert snap.manifest["licenses"]["dropped"] == {UNKNOWN: dropped}
    assert sum(snap.manifest["licenses"]["train"].values()) + sum(snap.manifest["licenses"]["val"].values()) == len(kept)
    everything = assemble(mix.model_copy(update={"licenses": []}))
    assert len(everything.train + everything.val) > len(kept) and everything.manifest["licenses"]["dropped"] == {}
