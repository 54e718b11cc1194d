"""What each lane produced for each item (a declaration, a task, a tool set), keyed by the
item's content hash and the lane's fingerprint (synth/lanes/fingerprint.py: its settings, models,
prompt templates, toolchains and the source it runs). A refresh processes only items with no entry: unchanged items reuse their
rows without a call or a compile; a changed setting or toolchain changes the fingerprint, so the
affected items run again (their LLM answers still come from the response cache).

An answer is kept as its zstd-compressed JSON: a repair item's rows repeat their crate context
(about 66 KB a row as JSON, about 5 KB compressed). An entry an older synth stored (a pickled
dict) is still read."""
from __future__ import annotations

from pathlib import Path

import diskcache

import orjson
import zstandard

from oracles.errors import SynthError

PACKED = b"zstd-json:"  # what starts a compressed answer
_compress = zstandard.ZstdCompressor(level=3).compress
_decompress = zstandard.ZstdDecompressor().decompress


class StoreLost(SynthError, RuntimeError):
    """An answer the item store was given is no longer there (a store that culls entries)."""


class ItemStore:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        # every entry kept: diskcache culls past 1 GiB by default (see oracles/cache.py `lasting`)
        self.cache = diskcache.Cache(str(directory), eviction_policy="none")

    def get(self, lane: str, lane_fingerprint: str, item: str) -> dict | None:
        value = self.cache.get((lane, lane_fingerprint, item))
        if isinstance(value, bytes) and value.startswith(PACKED):
            return orjson.loads(_decompress(value[len(PACKED):]))
        return value

    def put(self, lane: str, lane_fingerprint: str, item: str, value: dict) -> None:
        """Store a lane's answer for an item: JSON (rows dumped, rejections as JSON), compressed; an
        answer JSON cannot hold as it is (a key that is no string) is kept as it is, pickled."""
        try:
            packed = PACKED + _compress(orjson.dumps(value))
        except TypeError:
            packed = value
        self.cache.set((lane, lane_fingerprint, item), packed)

    def close(self) -> None:
        self.cache.close()
