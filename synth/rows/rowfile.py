"""Row files: one whole row a line (JSON), zstd-compressed, named `NAME.jsonl.zst`.

Any reader opens them without synth: `zstdcat rows/repair.jsonl.zst | jq`, pandas
`read_json(path, lines=True)`, duckdb `read_json('rows/*.jsonl.zst')`, `datasets.load_dataset(
"json", data_files=path)`. A row holds its context several times (its prompt, the files the oracle
checked) and a declaration gives several rows; zstd's long window finds those repeats, so a file
is smaller than the packed format of our own it replaces, which a plain reader could not read.
The same rows give the same bytes: one thread, a fixed level and window, input fed in fixed-size
pieces, zstandard pinned. Files of the packed format (`NAME.jsonl`, synth/rows/pack.py) are
still read, so older run directories and snapshots stay readable.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Iterable, Iterator

import zstandard
from pydantic import BaseModel

from synth.rows.jsonl import InOrder, atomic_write, line_of

SUFFIX = ".jsonl.zst"
LEGACY_SUFFIX = ".jsonl"  # the packed format: read, never written
# Level 9 with a 128 MiB window and long-distance matching: the window every zstd decoder accepts
# by default (zstd --long is needed above it); on a loop run's rows 0.20 KB a row against 3.6 packed.
PARAMS = dict(level=9, window_log=27, enable_ldm=True)
PIECE = 1 << 20  # bytes fed to the compressor at a time: the same input always splits the same way


def rows_path(folder: str | Path, name: str) -> Path:
    """Where rows named `name` (a task, a split) are written in `folder`."""
    return Path(folder) / f"{name}{SUFFIX}"


def existing_rows(folder: str | Path, name: str) -> Path:
    """The file holding rows named `name` in `folder`: the compressed one, else a packed one an
    older synth wrote; the compressed path when neither exists."""
    path = rows_path(folder, name)
    legacy = Path(folder) / f"{name}{LEGACY_SUFFIX}"
    return legacy if not path.exists() and legacy.exists() else path


def row_files(folder: str | Path) -> list[Path]:
    """Every row file in `folder`, one per name (the compressed one where both exist), by name."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    names = {rows_name(p) for p in folder.iterdir() if p.name.endswith((SUFFIX, LEGACY_SUFFIX))}
    return [existing_rows(folder, name) for name in sorted(names)]


def rows_name(path: str | Path) -> str:
    """`repair` for rows/repair.jsonl.zst (and for a packed rows/repair.jsonl)."""
    name = Path(path).name
    return name[:-len(SUFFIX)] if name.endswith(SUFFIX) else name.removesuffix(LEGACY_SUFFIX)


def write_rows(path: str | Path, rows: Iterable) -> int:
    """Atomically replace `path` (NAME.jsonl.zst) with the rows, whole. Returns the row count."""
    if not str(path).endswith(SUFFIX):
        raise ValueError(f"{path}: row files are written as NAME{SUFFIX}")
    count = 0

    def write(f):
        nonlocal count
        params = zstandard.ZstdCompressionParameters.from_level(PARAMS["level"], window_log=PARAMS["window_log"],
                                                               enable_ldm=PARAMS["enable_ldm"], threads=0)
        with zstandard.ZstdCompressor(compression_params=params).stream_writer(f, closefd=False) as out:
            pending = bytearray()
            for row in rows:
                pending += (line_of(InOrder(row.model_dump(mode="json") if hasattr(row, "model_dump") else row))
                            + "\n").encode()
                count += 1
                while len(pending) >= PIECE:
                    out.write(bytes(pending[:PIECE]))
                    del pending[:PIECE]
            out.write(bytes(pending))

    atomic_write(path, write, binary=True)
    return count


def read_rows(path: str | Path, model: type[BaseModel] | None = None) -> list:
    """The rows of a row file (a run's rows/, a snapshot's train or val), either format; a bad line
    is an error naming the file and line, never skipped."""
    return list(iter_rows(path, model))


def iter_rows(path: str | Path, model: type[BaseModel] | None = None) -> Iterator:
    """The rows of a row file one at a time (a pass over a large file holds one row)."""
    if not str(path).endswith(SUFFIX):
        from synth.rows.pack import read_packed
        yield from read_packed(path, model)
        return
    number = 0  # the line being read: a bad one (or a damaged file) is named
    try:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
            for line in io.TextIOWrapper(stream, encoding="utf-8"):
                number += 1
                if line.strip():
                    yield model.model_validate_json(line) if model else json.loads(line)
    except (ValueError, zstandard.ZstdError) as exc:
        raise ValueError(f"{path}:{number}: invalid row: {exc}") from exc
