"""Held rows (synth/rows/held.py): a row kept compressed between the lanes and the files reads as
the row it holds (attributes as the model, keys as its JSON), writes the same bytes, and a snapshot
of large rows, or a lane that collects them from the item store, holds a small part of them in
memory at once."""
import json
import tracemalloc
from pathlib import Path

import pytest

from conftest import EXAMPLE_CRATE
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.lanes.base import Lane, LaneSettings, RunContext, run_lane
from synth.mutate.repair import RepairSettings, repair_rows
from synth.pipeline.snapshot import snapshot_run
from synth.rows.held import HeldRow
from synth.rows.row import Row
from synth.rows.rowfile import read_rows, write_rows
from synth.rows.store import ItemStore
from synth.settings.config import AssembleSettings


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    decls = [d for d in decls if d.path.endswith(("stats.rs", "geometry.rs"))]
    made = repair_rows(decls, RustOracle(OracleSettings()), RepairSettings(), 0).rows
    assert len(made) >= 10
    return made


def test_a_held_row_reads_as_the_row_it_holds(rows, tmp_path):
    for row in rows:
        held, data = HeldRow.of(row), row.model_dump(mode="json")
        assert (held.id, held.task, held.operator, held.crate) == (row.id, row.task, row.operator, row.crate)
        assert held.provenance == row.provenance and held.verification == row.verification
        assert held.response == row.response and held.messages == row.messages
        assert held.row() == row and held.model_dump() == data
        assert held["prompt"] == data["prompt"] and held.get("provenance") == data["provenance"]
        assert held.get("no such field", 7) == 7 and getattr(held, "rating", None) is None
        with pytest.raises(KeyError):
            held["no such field"]
        heavier = held.model_copy(update={"mix_weight": 2.5, "mix_source": "loop"})
        assert (heavier.mix_weight, heavier["mix_source"], heavier.model_dump()["mix_weight"]) == (2.5, "loop", 2.5)
        assert heavier.row() == row.model_copy(update={"mix_weight": 2.5, "mix_source": "loop"})
        assert held.mix_weight == row.mix_weight  # the copy changed nothing held
    write_rows(tmp_path / "rows.jsonl.zst", rows)
    write_rows(tmp_path / "held.jsonl.zst", [HeldRow.of(r) for r in rows])
    assert (tmp_path / "held.jsonl.zst").read_bytes() == (tmp_path / "rows.jsonl.zst").read_bytes()


def large(row: Row, copies: int) -> Row:
    """The row with a context as long as a real crate's (about 60 KB: the example crate's files)."""
    text = "".join(p.read_text() for p in sorted(Path(EXAMPLE_CRATE).rglob("*.rs")))
    return row.model_copy(update={"context": (text * copies)[:60_000] + (row.context or "")})


def test_a_snapshot_holds_a_small_part_of_its_rows_in_memory(rows, tmp_path):
    many = [large(r, 20).model_copy(update={"id": f"{r.id}-{i}"}) for i in range(12) for r in rows]
    whole = sum(len(json.dumps(r.model_dump(mode="json"))) for r in many)
    assert whole > 10_000_000
    write_rows(tmp_path / "rows" / "repair.jsonl.zst", many)
    snapshot_run(tmp_path, AssembleSettings(), 0)  # the second one also reads the first (its diff)
    tracemalloc.start()
    try:
        snapshot_run(tmp_path, AssembleSettings(), 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(read_rows(tmp_path / "train.jsonl.zst")) + len(read_rows(tmp_path / "val.jsonl.zst")) > 0
    assert peak < whole / 4, (peak, whole)


class StoredRowsLane(Lane):
    """A lane whose items are the given rows: each item's answer is its row, as a lane stores it."""
    name = "stored_rows"

    def __init__(self, rows):
        self.made = {r.id: r for r in rows}
        self.keys = sorted(self.made)

    def items(self, ctx, settings, decls):
        return self.keys

    def key(self, item):
        return item

    def lang(self, item):
        return None

    def process(self, ctx, settings, todo, oracle, out):
        return {key: {"rows": [self.made[key].model_dump(mode="json")], "rejected": []} for key in todo}


def test_a_lane_holds_the_rows_it_collects_compressed(rows, tmp_path):
    many = [large(r, 20).model_copy(update={"id": f"{r.id}-{i}"}) for i in range(12) for r in rows]
    whole = sum(len(json.dumps(r.model_dump(mode="json"))) for r in many)
    lane, store = StoredRowsLane(many), ItemStore(tmp_path / "items")
    ctx = RunContext(store=store, oracles={}, client=None, seed=0)
    assert run_lane(lane, ctx, LaneSettings(), []).processed == len(many)
    lane.made = {}  # the next run reads every row back from the item store
    tracemalloc.start()
    try:
        out = run_lane(lane, ctx, LaneSettings(), [])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        store.close()
    assert out.reused == len(many) and [r.id for r in out.rows] == sorted(r.id for r in many)
    assert held < whole / 4, (held, whole)


def test_the_item_store_keeps_answers_compressed_and_reads_older_ones(rows, tmp_path):
    answer = {"rows": [large(r, 20).model_dump(mode="json") for r in rows[:4]], "rejected": []}
    store = ItemStore(tmp_path / "items")
    try:
        store.put("repair", "fp", "new", answer)
        store.cache.set(("repair", "fp", "old"), answer)  # as an older synth stored it (pickled)
        assert store.get("repair", "fp", "new") == answer == store.get("repair", "fp", "old")
        kept = store.cache.get(("repair", "fp", "new"))
        assert isinstance(kept, bytes) and len(kept) < len(json.dumps(answer)) / 5
    finally:
        store.close()
