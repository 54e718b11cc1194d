"""The identity of an answer: normalized per language (comments dropped, whitespace collapsed),
so two rows that differ only in formatting share a hash, stay together and dedup together."""
from __future__ import annotations

import hashlib
import re

from oracles.errors import InputError

LINE_COMMENT = re.compile(r"//[^\n]*")
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


def normalize_answer(text: str, lang: str) -> str:
    code = text
    if lang in ("rust", "vox"):
        code = LINE_COMMENT.sub("", code)  # includes `///` docs: the same code documented twice is one answer
        if lang == "rust":
            code = BLOCK_COMMENT.sub("", code)
    return " ".join(code.split())


def answer_hash(text: str, lang: str) -> str:
    return hashlib.sha256(f"{lang}\0{normalize_answer(text, lang)}".encode()).hexdigest()[:20]


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


class LeakedSplit(InputError):
    pass
