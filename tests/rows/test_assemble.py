"""Dataset assembly: split by answer, reproducible, decontaminated, strict, and a manifest that
matches the files."""
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import EXAMPLE_CRATE

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Verdict
from synth.assemble.answers import answer_hash
from synth.assemble.mix import Mix, Source, load_mix
from synth.assemble.snapshot import AssemblyError, assemble, write_snapshot
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.rows.jsonl import read_jsonl, write_jsonl
from synth.rows.rowfile import read_rows
from synth.lanes.base import LaneOutput
from synth.mutate.repair import RepairSettings, repair_rows
from synth.pipeline.run import write_outputs
from synth.rows.row import Provenance, Row, make_row

PASSED = Verdict(candidate_id="x", passed=True, oracle="rustc", toolchain="rustc 1.95.0")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A real repair run on the examples, and a codegen file with planted duplicates."""
    root = tmp_path_factory.mktemp("runs")
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    repair = repair_rows(decls, RustOracle(OracleSettings(jobs=2)), RepairSettings(), 0)
    write_outputs(root / "repair", {"repair": LaneOutput("repair", rows=repair.rows, rejected=repair.rejected)})
    codegen = []
    for d in [d for d in decls if d.kind == "fn"][:20]:
        for variant, answer in enumerate([d.clean_text, d.clean_text.replace("\n", "\n\n") + "\n// same code"]):
            codegen.append(make_row(lang="rust", lane="rust_codegen", task="codegen",
                                    prompt=f"Write `{d.name}` (phrasing {variant}).", response=answer, verdict=PASSED,
                                    provenance=Provenance(source_path=d.path, decl_hash=d.hash, stage="backtranslate",
                                                          seed=0), checked_source=answer, rating=4 + variant % 2))
    write_jsonl(root / "codegen.jsonl", codegen)
    return root


def _mix(runs, **kw) -> Mix:
    sources = kw.pop("sources", None) or [Source(name="repair", path=str(runs / "repair"), weight=2.0),
                                          Source(name="codegen", path=str(runs / "codegen.jsonl"))]
    return Mix(sources=sources, val_share={"default": 0.2}, **kw)


def test_no_answer_in_both_splits_and_planted_duplicates_are_dropped(runs):
    snap = assemble(_mix(runs))
    train = {answer_hash(r.response, r.lang) for r in snap.train}
    val = {answer_hash(r.response, r.lang) for r in snap.val}
    assert snap.train and snap.val and not (train & val)
    codegen = [r for r in snap.train + snap.val if r.task == "codegen"]
    assert len(codegen) == 20  # 40 planted rows, two per answer (whitespace and comment variants)
    assert all(r.rating == 5 for r in codegen)  # the best-rated copy is the one kept
    assert sum(r.reason.startswith("duplicate of") for r in snap.rejected) == 20
    assert snap.manifest["rejected_by_reason"] == {"duplicate": 20}
    assert {r.mix_weight for r in snap.train if r.task == "repair"} == {2.0}  # the weight is on each row
    assert {r.mix_weight for r in snap.train if r.task == "codegen"} == {1.0}


def test_same_inputs_same_bytes_and_adding_a_source_reshuffles_nothing(runs, tmp_path):
    for name in ("a", "b"):
        write_snapshot(assemble(_mix(runs, seed=3)), tmp_path / name)
    for rel in ("train.jsonl.zst", "val.jsonl.zst", "manifest.json", "rejected/assemble.jsonl", "trl/train.jsonl",
                "data/train.parquet", "README.md"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    repair_only = _mix(runs, seed=3, sources=[Source(name="repair", path=str(runs / "repair"), sample_rate=0.5)])
    both = _mix(runs, seed=3, sources=[Source(name="repair", path=str(runs / "repair"), sample_rate=0.5),
                                      Source(name="codegen", path=str(runs / "codegen.jsonl"))])
    alone, together = assemble(repair_only), assemble(both)
    ids = lambda s: sorted(r.id for r in s.train + s.val if r.task == "repair")  # noqa: E731
    assert ids(alone) == ids(together) and 0 < len(ids(alone)) < 239
    split = lambda s: {r.id: "train" for r in s.train} | {r.id: "val" for r in s.val}  # noqa: E731
    assert all(split(alone)[i] == split(together)[i] for i in ids(alone))
    assert assemble(_mix(runs, seed=4)).val != assemble(_mix(runs, seed=3)).val  # the seed matters


def test_decontamination_drops_a_planted_overlap_and_reports_zero_when_clean(runs, tmp_path):
    bench = tmp_path / "humaneval-vox" / "gcd_problem"
    bench.mkdir(parents=True)
    clean = assemble(_mix(runs, bench=[str(tmp_path / "humaneval-vox")]))
    assert clean.manifest["decontamination"]["dropped"] == 0  # the bench holds nothing of ours yet
    # Known answer: a bench reference that shares one 8-token run with the examples' gcd.
    (bench / "reference.vox").write_text("fn gcd(a: int, b: int) to int {\n    // gcd(b, a % b) } else { a\n}\n")
    dirty = assemble(_mix(runs, bench=[str(tmp_path / "humaneval-vox")]))
    dropped = [r for r in dirty.rejected if r.reason.startswith("overlaps the held-out bench")]
    assert dropped and dirty.manifest["decontamination"]["dropped"] == len(dropped)
    assert not any("gcd(b, a % b)" in r.response for r in dirty.train + dirty.val)
    assert all("gcd" in r.reason or "%" in r.reason for r in dropped)


def test_strict_readiness_names_the_lane_and_the_figure(runs):
    mix = _mix(runs, strict=True, readiness={"rust_codegen": {"min_rows": 50}})
    with pytest.raises(AssemblyError, match=r"lane `rust_codegen` is not ready: 20 rows < min_rows 50"):
        assemble(mix)
    lenient = assemble(_mix(runs, readiness={"rust_codegen": {"min_unique_ratio": 0.9}}))
    assert any("unique-answer ratio 0.500 < 0.9" in w for w in lenient.warnings)
    with pytest.raises(AssemblyError, match="required source"):
        assemble(_mix(runs, sources=[Source(name="gone", path=str(runs / "missing.jsonl"))]))
    optional = assemble(_mix(runs, sources=[Source(name="gone", path=str(runs / "missing.jsonl"), optional=True),
                                            Source(name="codegen", path=str(runs / "codegen.jsonl"))]))
    assert any("optional: skipped" in w for w in optional.warnings)


def test_manifest_counts_equal_a_recount_of_the_files(runs, tmp_path):
    paths = write_snapshot(assemble(_mix(runs)), tmp_path / "snap")
    manifest = json.loads(Path(paths["manifest"]).read_text())
    train, val = read_rows(paths["train"], Row), read_rows(paths["val"], Row)
    rejected = read_jsonl(paths["rejected"])
    assert manifest["counts"] == {"train": len(train), "val": len(val), "rejected": len(rejected)}
    for lane, counts in manifest["by_lane"].items():
        assert counts["train"] == sum(r.lane == lane for r in train)
        assert counts["val"] == sum(r.lane == lane for r in val)
    assert manifest["by_task"]["train"] == dict(Counter(r.task for r in train))
    assert manifest["by_source"]["val"] == dict(Counter(r.mix_source for r in val))
    assert sum(manifest["length"]["bins"].values()) == len(train) + len(val)
    trl = read_jsonl(paths["trl_train"])
    assert len(trl) == len(train) and set(trl[0]) == {"messages"}
    # the folder is a dataset: `datasets` loads its splits, and its card's YAML says what they are
    import yaml
    from datasets import load_dataset
    loaded = load_dataset("parquet", data_dir=str(Path(paths["card"]).parent / "data"), cache_dir=str(tmp_path / "hf"))
    assert loaded["train"].num_rows == len(train) and loaded["validation"].num_rows == len(val)
    assert loaded["train"][0]["messages"] == [m.model_dump() for m in train[0].messages]
    assert loaded["train"][0]["license"] == (train[0].provenance.license or "unknown")
    card = Path(paths["card"]).read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["task_categories"] == ["text-generation"] and meta["license"]
    assert {s["name"]: s["num_examples"] for s in meta["dataset_info"]["splits"]} == \
        {"train": len(train), "validation": len(val)}
    assert [f["path"] for f in meta["configs"][0]["data_files"]] == ["data/train.parquet", "data/val.parquet"]


def test_mix_file_is_validated(tmp_path):
    bad = tmp_path / "mix.toml"
    bad.write_text('[[sources]]\nname = "x"\npath = "rows.jsonl"\nwieght = 2\n')
    with pytest.raises(ValueError, match="wieght"):
        load_mix(bad)
    good = tmp_path / "good.toml"
    good.write_text('seed = 1\n[[sources]]\nname = "x"\npath = "rows.jsonl"\nweight = 2\n')
    assert load_mix(good).sources[0].path == str(tmp_path / "rows.jsonl")
