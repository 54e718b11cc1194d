"""synth's stores on disk keep everything they are given. diskcache culls the oldest entries of a
cache past its size limit (1 GiB by default), silently: the item store of the loop's 25 crates
(1.1 GB before answers were compressed) lost once_cell's and half of serde_json's rows, 3,700 of
29,731, and nothing said so. Here the limit is made tiny, so the same culling would happen at once."""
import base64
import random

import diskcache
import pytest

from oracles.cache import VerdictCache
from oracles.verdict import Verdict
from synth.lanes.base import Lane, LaneSettings, RunContext, run_lane
from synth.llm.response_cache import ResponseCache
from synth.rows.store import ItemStore, StoreLost

LIMIT = 100_000  # bytes: a tenth of what each test stores


def blob(i: int, size: int = 20_000) -> str:
    """`size` bytes zstd cannot shrink much (the item store compresses)."""
    return base64.b64encode(random.Random(i).randbytes(size * 3 // 4)).decode()


def _item_store(tmp_path):
    store = ItemStore(tmp_path / "items")
    return store, store.cache, lambda i, v: store.put("lane", "fp", str(i), {"blob": v}), \
        lambda i: (store.get("lane", "fp", str(i)) or {}).get("blob")


def _verdicts(tmp_path):
    cache = VerdictCache(tmp_path / "verdicts")

    def put(i, v):
        cache.put(str(i), Verdict(candidate_id=str(i), passed=True, oracle="rustc", toolchain=v))

    def get(i):
        hit = cache.get(str(i))
        return hit.toolchain if hit else None
    return cache, cache._cache, put, get


def _responses(tmp_path):
    cache = ResponseCache(tmp_path / "llm")
    return cache, cache.cache, lambda i, v: cache.put(str(i), {"text": v}), lambda i: (cache.get(str(i)) or {}).get("text")


@pytest.mark.parametrize("opened", [_item_store, _verdicts, _responses], ids=["items", "verdicts", "responses"])
def test_a_store_past_its_size_limit_keeps_every_entry(tmp_path, opened):
    store, disk, put, get = opened(tmp_path)
    disk.reset("size_limit", LIMIT)  # as if 1 GiB were already stored
    try:
        for i in range(30):
            put(i, blob(i))
        assert disk.volume() > 3 * LIMIT
        assert [i for i in range(30) if get(i) != blob(i)] == []
    finally:
        disk.close()


class BlobLane(Lane):
    name = "blobs"

    def __init__(self, n: int):
        self.n = n

    def items(self, ctx, settings, decls):
        return list(range(self.n))

    def key(self, item):
        return str(item)

    def lang(self, item):
        return None

    def process(self, ctx, settings, todo, oracle, out):
        return {str(i): {"blob": blob(i)} for i in todo}

    def collect(self, stored, out):
        out.pairs.append(stored["blob"])


def test_a_lane_whose_stored_answers_vanish_stops_instead_of_losing_rows(tmp_path):
    store = ItemStore(tmp_path / "items")
    ctx = RunContext(store=store, oracles={}, client=None, seed=0)
    try:
        out = run_lane(BlobLane(30), ctx, LaneSettings(), [])
        assert out.pairs == [blob(i) for i in range(30)]
        # a store that culls, as every synth store did before: the first answers go as the last come
        store.cache.reset("eviction_policy", "least-recently-stored")
        store.cache.reset("size_limit", LIMIT)
        with pytest.raises(StoreLost, match=r"no longer holds \d+ of the blobs lane's answers"):
            run_lane(BlobLane(60), ctx, LaneSettings(), [])
    finally:
        store.close()


def test_an_older_store_that_culled_is_opened_as_one_that_keeps_everything(tmp_path):
    diskcache.Cache(str(tmp_path / "items")).close()  # made by an older synth: the default policy
    store = ItemStore(tmp_path / "items")
    try:
        assert store.cache.eviction_policy == "none"
    finally:
        store.close()
    assert diskcache.Cache(str(tmp_path / "items")).eviction_policy == "none"  # and it stays so
