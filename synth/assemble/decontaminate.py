"""Held-out bench decontamination: a row whose answer or prompt shares an n-gram (default 8
tokens) with any bench file is dropped and listed with the n-gram found."""
from __future__ import annotations

import hashlib
from pathlib import Path

from .answers import tokens

BENCH_SUFFIXES = {".vox", ".rs", ".toml", ".md", ".txt", ".json", ".jsonl"}


def _grams(text: str, n: int):
    toks = tokens(text)
    for i in range(len(toks) - n + 1):
        yield " ".join(toks[i:i + n])


def _key(gram: str) -> bytes:
    return hashlib.blake2b(gram.encode(), digest_size=8).digest()


class BenchIndex:
    def __init__(self, paths: list[str | Path], n: int = 8):
        self.n = n
        self.grams: set[bytes] = set()
        self.files = 0
        for root in paths:
            root = Path(root)
            files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in BENCH_SUFFIXES)
            for path in files:
                self.files += 1
                self.grams.update(_key(g) for g in _grams(path.read_text(encoding="utf-8", errors="replace"), n))

    def overlap(self, text: str) -> str | None:
        """The first n-gram of `text` found in the bench, or None."""
        for gram in _grams(text, self.n):
            if _key(gram) in self.grams:
                return gram
        return None
