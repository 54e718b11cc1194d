"""Row files (synth/rows/rowfile.py): whole rows, one a line, zstd-compressed. A plain reader
(zstandard and json, no synth import) reads what synth reads; they are smaller than the packed
files synth wrote before (synth/rows/pack.py), which are still read; the same rows give the same
bytes; a damaged file is an error naming it; the training export is unchanged."""
import json
import subprocess
import sys

import pytest

from conftest import EXAMPLE_CRATE
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.assemble.snapshot import Snapshot, write_snapshot
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.lanes.base import LaneOutput
from synth.pipeline.run import write_outputs
from synth.rows.jsonl import write_jsonl
from synth.mutate.repair import RepairSettings, repair_rows
from synth.rows.pack import MIN_SHARED, read_packed, write_packed
from synth.rows.row import Row
from synth.rows.rowfile import PIECE, read_rows, row_files, write_rows

PLAIN_READER = """
import io, json, sys, zstandard
with open(sys.argv[1], "rb") as f:
    rows = [json.loads(line) for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), "utf-8")]
assert not [m for m in sys.modules if m.split(".")[0] in ("synth", "oracles", "training")]
print(json.dumps(rows))
"""


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    decls = [d for d in decls if d.path.endswith(("stats.rs", "geometry.rs"))]
    made = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(), 0).rows
    assert len(made) >= 10 and len({r.context for r in made}) < len(made)  # rows share contexts
    return made


def test_a_plain_reader_reads_what_synth_reads_and_the_file_is_smaller_than_packed(rows, tmp_path):
    path = tmp_path / "rows" / "repair.jsonl.zst"
    assert write_rows(path, rows) == len(rows)
    back = read_rows(path, Row)
    assert [r.model_dump_json() for r in back] == [r.model_dump_json() for r in rows]
    plain = subprocess.run([sys.executable, "-c", PLAIN_READER, str(path)], capture_output=True, text=True, check=True)
    assert json.loads(plain.stdout) == read_rows(path) == [r.model_dump(mode="json") for r in rows]
    write_packed(tmp_path / "packed.jsonl", rows)
    write_jsonl(tmp_path / "whole.jsonl", rows)
    size, packed, whole = (path.stat().st_size, (tmp_path / "packed.jsonl").stat().st_size,
                           (tmp_path / "whole.jsonl").stat().st_size)
    assert size < packed < whole, (size, packed, whole)


def test_the_same_rows_give_the_same_bytes_past_one_piece(rows, tmp_path):
    many = [r.model_copy(update={"id": f"{r.id}-{i}"}) for i in range(40) for r in rows]
    assert sum(len(r.model_dump_json()) for r in many) > 2 * PIECE  # fed to the compressor in several pieces
    write_rows(tmp_path / "a.jsonl.zst", many)
    write_rows(tmp_path / "b.jsonl.zst", iter(many))
    assert (tmp_path / "a.jsonl.zst").read_bytes() == (tmp_path / "b.jsonl.zst").read_bytes()
    assert [r["id"] for r in read_rows(tmp_path / "a.jsonl.zst")] == [r.id for r in many]


def test_a_damaged_file_or_line_is_an_error_naming_it(rows, tmp_path):
    path = tmp_path / "cut.jsonl.zst"
    write_rows(path, rows)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError, match=r"cut.jsonl.zst:\d+: invalid row"):
        read_rows(path)
    write_rows(path, [*[r.model_dump(mode="json") for r in rows[:2]], {"id": "x"}])
    with pytest.raises(ValueError, match=r"cut.jsonl.zst:3: invalid row"):
        read_rows(path, Row)
    with pytest.raises(ValueError, match="written as NAME.jsonl.zst"):
        write_rows(tmp_path / "rows.jsonl", rows)


def test_a_run_replaces_the_packed_files_an_older_synth_wrote(rows, tmp_path):
    write_packed(tmp_path / "rows" / "repair.jsonl", rows)
    write_packed(tmp_path / "rows" / "gone.jsonl", rows[:1])
    assert [p.name for p in row_files(tmp_path / "rows")] == ["gone.jsonl", "repair.jsonl"]
    assert read_rows(tmp_path / "rows" / "repair.jsonl", Row) == rows  # still read
    write_outputs(tmp_path, {"repair": LaneOutput("repair", rows=rows)})
    assert sorted(p.name for p in (tmp_path / "rows").iterdir()) == ["repair.jsonl.zst"]


def test_packed_rows_read_back_byte_for_byte_and_are_smaller(rows, tmp_path):
    write_jsonl(tmp_path / "whole.jsonl", rows)
    write_packed(tmp_path / "packed.jsonl", rows)
    back = read_packed(tmp_path / "packed.jsonl", Row)
    assert [r.model_dump_json() for r in back] == [r.model_dump_json() for r in rows]
    assert read_packed(tmp_path / "packed.jsonl") == read_packed(tmp_path / "whole.jsonl")
    lines = (tmp_path / "packed.jsonl").read_text().splitlines()
    assert len(lines) == len(rows)  # still one row a line
    whole, packed = (tmp_path / "whole.jsonl").stat().st_size, (tmp_path / "packed.jsonl").stat().st_size
    assert whole > 2 * packed, (whole, packed)
    shared = [(r, x) for r, x in zip(rows, lines) if len(r.context.rstrip().encode()) >= MIN_SHARED]
    assert len(shared) >= 5
    for row, line in shared:  # the context is written once in the file, not once a row
        context = row.context.rstrip()
        assert sum(context in json.loads(x).get("@texts", {}).values() for x in lines) == 1
        assert json.dumps(context)[1:-1] not in line or "@texts" in line


def test_a_packed_line_whose_text_the_file_lacks_is_an_error_naming_it(rows, tmp_path):
    write_packed(tmp_path / "packed.jsonl", rows)
    lines = (tmp_path / "packed.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[1:]) + "\n")  # the first row defined texts
    with pytest.raises(ValueError, match=r"cut.jsonl:\d+: invalid row: .*no earlier line"):
        read_packed(tmp_path / "cut.jsonl", Row)


def test_a_row_quoting_the_mark_is_not_read_as_packed(rows, tmp_path):
    quoted = rows[0].model_copy(update={"response": 'let s = "\\"@packed\\":1";'}, deep=True)
    quoted.messages[-1] = quoted.messages[-1].model_copy(update={"content": quoted.response})
    write_jsonl(tmp_path / "whole.jsonl", [quoted])
    assert read_packed(tmp_path / "whole.jsonl", Row)[0].model_dump_json() == quoted.model_dump_json()


def test_the_training_export_is_self_contained_and_unchanged(rows, tmp_path):
    snap = Snapshot(train=rows[:-2], val=rows[-2:], rejected=[], manifest={})
    paths = write_snapshot(snap, tmp_path / "snap", parquet=False)
    trl = read_packed(paths["trl_train"])
    assert trl == [{"messages": [m.model_dump() for m in r.messages]} for r in rows[:-2]]
    assert all(set(line) == {"messages"} and all(isinstance(m["content"], str) for m in line["messages"])
               for line in trl)
    assert [r.model_dump_json() for r in read_rows(paths["train"], Row)] == [r.model_dump_json() for r in rows[:-2]]
