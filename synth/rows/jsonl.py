"""JSONL files that are never half-written: write a temp file beside the target, fsync, rename."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel


class InOrder(dict):
    """A dict written compactly in its own key order (as model_dump_json writes a model)."""


def line_of(item) -> str:
    """One JSON line of `item` (a model, an InOrder dict as it is, any other dict with sorted keys)."""
    if isinstance(item, BaseModel):
        return item.model_dump_json()
    if isinstance(item, InOrder):
        return json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def atomic_write(path: str | Path, write, binary: bool = False) -> None:
    """Write through `write(file)` to a temp file beside `path` (opened as text, or `binary`),
    fsync, rename. If anything fails, the previous file (if any) is untouched and no temp file is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | Path, items: Iterable) -> int:
    """Atomically replace `path` with one JSON object per line. Returns the row count."""
    count = 0

    def write(f):
        nonlocal count
        for item in items:
            f.write(line_of(item) + "\n")
            count += 1

    atomic_write(path, write)
    return count


def write_json(path: str | Path, value) -> None:
    """Atomically replace `path` with one JSON document."""
    atomic_write(path, lambda f: f.write(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"))


def read_jsonl(path: str | Path, model: type[BaseModel] | None = None, unpack=None) -> list:
    """Rows of a JSONL file; a bad line is an error naming the file and line, never skipped.
    `unpack(line, texts)`: how a line written packed (synth/rows/pack.py) is read whole again."""
    out: list = []
    texts: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = unpack(line, texts) if unpack else None
                if item is not None:
                    out.append(model.model_validate(item) if model else item)
                else:
                    out.append(model.model_validate_json(line) if model else json.loads(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: invalid row: {exc}") from exc
    return out
