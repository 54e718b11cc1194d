"""`synth extract`: files -> declarations JSONL, with a report of everything skipped and why.

Work is cut into parts (plan.py) that run in a process pool; each writes its declarations to a
file of its own, and the parts are appended to the output in order as they finish, so the output
is the same bytes whatever the number of workers. A part still running after a few seconds (a
crate with large contexts) stops at a file boundary and the rest of its files become shards that
every worker shares."""
from __future__ import annotations

import itertools
import multiprocessing
import os
import shutil
import tempfile
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from oracles.isolation import run_folders
from synth.rows.jsonl import atomic_write

from synth.extract.corpus import Skip
from synth.extract.model import Declaration
from synth.extract.plan import Part, plan, shards
from synth.extract.rust.context import MAX_CONTEXT_BYTES
from synth.extract.vox import load_grammar
from synth.extract import work
from synth.extract.work import PartOutput, run_part

SPLIT_AFTER_S = 2.0  # a part taking more CPU seconds than this is finished in shards


@dataclass
class ExtractOptions:
    include_tests: bool = False  # test functions and `#[cfg(test)]` modules
    max_bytes: int = 1_000_000
    vox_grammar: str | None = None  # path to a compiled tree-sitter grammar for Vox
    with_context: bool = True
    max_context_bytes: int | None = MAX_CONTEXT_BYTES  # a Rust context's size budget; None: none
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)


@dataclass
class ExtractResult:
    declarations: list[Declaration] = field(default_factory=list)  # extract_paths only
    skipped: list[Skip] = field(default_factory=list)
    files_read: int = 0
    bytes_read: int = 0
    dropped: Counter = field(default_factory=Counter)  # declarations left out, by reason
    written: int = 0  # declarations made
    by_lang_kind: Counter = field(default_factory=Counter)
    near_parse_error: int = 0
    retired: int = 0

    def summary(self) -> dict:
        return {
            "files_read": self.files_read,
            "bytes_read": self.bytes_read,
            "files_skipped": len(self.skipped),
            "skipped_by_reason": dict(Counter(_reason_kind(s.reason) for s in self.skipped)),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "declarations": self.written,
            "by_lang_kind": dict(sorted(self.by_lang_kind.items())),
            "declarations_left_out": dict(self.dropped),
            "near_parse_error": self.near_parse_error,
            "retired": self.retired,
        }

    def add(self, part: PartOutput, skipped: list) -> None:
        self.files_read += part.files_read
        self.bytes_read += part.bytes_read
        self.dropped.update(part.dropped)
        self.written += part.declarations
        self.by_lang_kind.update(part.by_lang_kind)
        self.near_parse_error += part.near_parse_error
        self.retired += part.retired
        skipped += part.skipped


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0]


def extract_paths(paths: list[str | Path], options: ExtractOptions | None = None) -> ExtractResult:
    """Declarations of every Rust and Vox file under `paths`, in memory (for small corpora:
    `extract_to_jsonl` streams a corpus of any size to a file)."""
    with run_folders.folder("extract") as tmp:
        out = Path(tmp) / "declarations.jsonl"
        result = extract_to_jsonl(paths, out, options)
        with open(out, encoding="utf-8") as f:
            result.declarations = [Declaration.model_validate_json(line) for line in f]
    return result


def extract_to_jsonl(paths: list[str | Path], out: str | Path, options: ExtractOptions | None = None) -> ExtractResult:
    """Write the declarations of every Rust and Vox file under `paths` to `out` (JSONL, ordered
    by path then span; replaced atomically). Memory holds a crate's index per worker, not the
    declarations."""
    options = options or ExtractOptions()
    if options.vox_grammar:
        load_grammar(options.vox_grammar)  # fail before any work if the grammar cannot be used
    skipped: list[tuple[tuple, Skip]] = []
    parts = plan(paths, skipped, options.include_tests)
    result = ExtractResult()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(f) -> None:
        if options.jobs <= 1 or len(parts) <= 1:
            for part in parts:
                result.add(run_part(part, options, f), skipped)
            return
        with tempfile.TemporaryDirectory(prefix=f".{out.name}.parts-", dir=out.parent) as tmp:
            for path, output in _in_parallel(parts, options, Path(tmp)):
                result.add(output, skipped)
                f.flush()
                with open(path, "rb") as part_file:
                    shutil.copyfileobj(part_file, f.buffer, 1 << 20)
                path.unlink()

    atomic_write(out, write)
    result.skipped = [skip for _, skip in sorted(skipped, key=lambda pair: pair[0])]
    return result


def _in_parallel(parts: list[Part], options: ExtractOptions, tmp: Path):
    """(file, output) of each part in output order, as soon as it and all before it are done.
    Parts are submitted in output order; one that stops early is followed by its shards."""
    names = itertools.count()
    # Workers from a fork server, never forked from this process: a caller may have threads (an LLM
    # lane's pool, a Ray driver), and a child forked while one of them held a lock can hang forever.
    with ProcessPoolExecutor(max_workers=options.jobs, mp_context=multiprocessing.get_context("forkserver")) as pool:
        def submit(part: Part, budget: float | None) -> tuple[Path, Future]:
            path = tmp / f"{next(names)}.jsonl"
            # The caller's settings travel with the part (a fork server's workers import fresh modules).
            return path, pool.submit(_part_to_file, part, options, str(path), budget, work.REPARSE_FACTOR)

        slots = [(part, *submit(part, SPLIT_AFTER_S)) for part in parts]  # in output order
        split: set[Future] = set()
        written = 0
        while written < len(slots):
            wait([future for _, _, future in slots[written:] if not future.done()], return_when=FIRST_COMPLETED)
            for position in range(len(slots) - 1, written - 1, -1):  # back to front: inserts keep places
                part, _, future = slots[position]
                if future.done() and future not in split and future.result().done is not None:
                    split.add(future)
                    rest = shards(part, future.result().done, 2 * options.jobs)
                    slots[position + 1:position + 1] = [(shard, *submit(shard, None)) for shard in rest]
            while written < len(slots) and slots[written][2].done():
                yield slots[written][1], slots[written][2].result()
                written += 1


def _part_to_file(part: Part, options: ExtractOptions, path: str, budget: float | None,
                  reparse_factor: float) -> PartOutput:
    with open(path, "w", encoding="utf-8") as f:
        return run_part(part, options, f, budget, reparse_factor)


def extract_sources(sources) -> tuple[list[Declaration], list[Skip]]:
    """The declarations of a config's `[[sources]]` (each a path and its language, or all), in id order."""
    decls, skipped = [], []
    for source in sources:
        result = extract_paths([source.path], ExtractOptions(include_tests=source.include_tests))
        decls += [d for d in result.declarations if source.lang in (None, d.lang)]
        skipped += result.skipped
    return sorted(decls, key=lambda d: d.id), skipped
