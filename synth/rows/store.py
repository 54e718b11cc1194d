"""What each lane produced for each item (a declaration, a task, a tool set), keyed by the
item's content hash and the lane's fingerprint (synth/lanes/fingerprint.py: its settings, models,
prompt templates, toolchains and the source it runs). A refresh processes only items with no entry: unchanged items reuse their
rows without a call or a compile; a changed setting or toolchain changes the fingerprint, so the
affected items run again (their LLM answers still come from the response cache)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import diskcache


def fingerprint(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


class ItemStore:
    def __init__(self, directory: str | Path):
        self.cache = diskcache.Cache(str(directory))

    def get(self, lane: str, lane_fingerprint: str, item: str) -> dict | None:
        return self.cache.get((lane, lane_fingerprint, item))

    def put(self, lane: str, lane_fingerprint: str, item: str, value: dict) -> None:
        self.cache.set((lane, lane_fingerprint, item), value)

    def close(self) -> None:
        self.cache.close()
