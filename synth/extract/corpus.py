"""Which files make a corpus, and why the others do not. Every skipped file gets a reason."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = {"target": "build output (target/)", "vendor": "vendored code (vendor/)",
             "patches": "patched third-party code (patches/)", "archive": "archived code (archive/)",
             ".git": "version control", "node_modules": "dependencies (node_modules/)"}
LANG_BY_SUFFIX = {".rs": "rust", ".vox": "vox"}
GENERATED_MARKERS = ("@generated", "DO NOT EDIT", "automatically generated")
MAX_BYTES_DEFAULT = 1_000_000


@dataclass
class SourceFile:
    path: Path  # absolute
    rel: str  # relative to the scanned root
    lang: str
    data: bytes
    text: str


@dataclass
class Skip:
    path: str
    reason: str


@dataclass
class Corpus:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def _generated_marker(head: str) -> str | None:
    for marker in GENERATED_MARKERS:
        if marker in head:
            return marker
    return None


def read_source(path: Path, rel: str, lang: str, max_bytes: int) -> SourceFile | Skip:
    """Read one file or say exactly why not."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return Skip(rel, f"unreadable: {exc.strerror}")
    if size > max_bytes:
        return Skip(rel, f"too large: {size} bytes > limit {max_bytes}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Skip(rel, f"unreadable: {exc.strerror}")
    if b"\0" in data[:8192]:
        return Skip(rel, "binary (NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skip(rel, f"invalid UTF-8 at byte {exc.start}")
    marker = _generated_marker(text[:2000])
    if marker:
        return Skip(rel, f"generated file (marker `{marker}`)")
    return SourceFile(path, rel, lang, data, text)


def collect(paths: list[str | Path], max_bytes: int = MAX_BYTES_DEFAULT, langs: set[str] | None = None) -> Corpus:
    """Files under `paths` (files or folders), in a stable order, with the skip report."""
    corpus = Corpus()
    for path, rel, lang in list_sources(paths, corpus.skipped, langs):
        result = read_source(path, rel, lang, max_bytes)
        (corpus.skipped if isinstance(result, Skip) else corpus.files).append(result)
    return corpus


def list_sources(paths: list[str | Path], skipped: list[Skip], langs: set[str] | None = None):
    """(path, rel, lang) of each candidate file under `paths`, in a stable order, unread; what is
    left out before reading is appended to `skipped`."""
    for raw in paths:
        root = Path(raw).resolve()
        if not root.exists():
            skipped.append(Skip(str(raw), "no such file or directory"))
            continue
        base = root.parent if root.is_file() else root
        candidates = [root] if root.is_file() else _walk(root, base, skipped)
        for path in candidates:
            rel = str(path.relative_to(base))
            lang = LANG_BY_SUFFIX.get(path.suffix)
            if lang is None or (langs and lang not in langs):
                if root.is_file():
                    skipped.append(Skip(rel, f"not a Rust or Vox file ({path.suffix or 'no suffix'})"))
                continue
            if path.name.endswith(".generated.rs"):
                skipped.append(Skip(rel, "generated file (*.generated.rs)"))
                continue
            yield path, rel, lang


def _walk(root: Path, base: Path, skipped: list[Skip]):
    for dirpath, dirnames, filenames in os.walk(root):
        keep = []
        for d in sorted(dirnames):
            if d in SKIP_DIRS:
                rel = str((Path(dirpath) / d).relative_to(base))
                skipped.append(Skip(rel + "/", SKIP_DIRS[d]))
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            yield Path(dirpath) / name
