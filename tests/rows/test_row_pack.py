"""Rows on disk carry each text once (synth/rows/pack.py): the context, the system prompt and the
original's verdict once per file, the broken code and the answer once per row; read back, the
rows are exactly what was written, and the training export is unchanged."""
import json

import pytest

from conftest import EXAMPLE_CRATE
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.assemble.snapshot import Snapshot, write_snapshot
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.rows.jsonl import write_jsonl
from synth.mutate.repair import RepairSettings, repair_rows
from synth.rows.pack import MIN_SHARED, read_rows, write_rows
from synth.rows.row import Row


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    decls = [d for d in decls if d.path.endswith(("stats.rs", "geometry.rs"))]
    made = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(), 0).rows
    assert len(made) >= 10 and len({r.context for r in made}) < len(made)  # rows share contexts
    return made


def test_packed_rows_read_back_byte_for_byte_and_are_smaller(rows, tmp_path):
    write_jsonl(tmp_path / "whole.jsonl", rows)
    write_rows(tmp_path / "packed.jsonl", rows)
    back = read_rows(tmp_path / "packed.jsonl", Row)
    assert [r.model_dump_json() for r in back] == [r.model_dump_json() for r in rows]
    assert read_rows(tmp_path / "packed.jsonl") == read_rows(tmp_path / "whole.jsonl")
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
    write_rows(tmp_path / "packed.jsonl", rows)
    lines = (tmp_path / "packed.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[1:]) + "\n")  # the first row defined texts
    with pytest.raises(ValueError, match=r"cut.jsonl:\d+: invalid row: .*no earlier line"):
        read_rows(tmp_path / "cut.jsonl", Row)


def test_a_row_quoting_the_mark_is_not_read_as_packed(rows, tmp_path):
    quoted = rows[0].model_copy(update={"response": 'let s = "\\"@packed\\":1";'}, deep=True)
    quoted.messages[-1] = quoted.messages[-1].model_copy(update={"content": quoted.response})
    write_jsonl(tmp_path / "whole.jsonl", [quoted])
    assert read_rows(tmp_path / "whole.jsonl", Row)[0].model_dump_json() == quoted.model_dump_json()


def test_the_training_export_is_self_contained_and_unchanged(rows, tmp_path):
    snap = Snapshot(train=rows[:-2], val=rows[-2:], rejected=[], manifest={})
    paths = write_snapshot(snap, tmp_path / "snap", parquet=False)
    trl = read_rows(paths["trl_train"])
    assert trl == [{"messages": [m.model_dump() for m in r.messages]} for r in rows[:-2]]
    assert all(set(line) == {"messages"} and all(isinstance(m["content"], str) for m in line["messages"])
               for line in trl)
    assert [r.model_dump_json() for r in read_rows(paths["train"], Row)] == [r.model_dump_json() for r in rows[:-2]]
