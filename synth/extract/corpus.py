"""Which files make a corpus, and why the others do not. Every skipped file gets a reason."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = {"target": "build output (target/)", "vendor": "vendored code (vendor/)",
             "patches": "patched third-party code (patches/)", "archive": "archived code (archive/)",
             ".git": "version control", "node_modules": "dependencies (node_modules/)"}
LANG_BY_SUFFIX = {".rs": "rust", ".vox": "vox"}
GENERATED_MARKERS = ("@generated", "DO NOT EDIT", "automatically generated")
MAX_BYTES_DEFAULT = 1_000_000
# A crate's test and example code: not product code, and it cannot be checked as the library.
TEST_CODE_DIRS = {"tests": "integration tests (tests/)", "benches": "benchmarks (benches/)",
                  "examples": "examples (examples/)"}
TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')


@dataclass
class SourceFile:
    path: Path  # absolute
    rel: str  # relative to the scanned root
    lang: str
    data: bytes
    text: str
    test_code: str | None = None  # why it is a crate's test or example code (kept with --include-tests)


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


def collect(paths: list[str | Path], max_bytes: int = MAX_BYTES_DEFAULT, langs: set[str] | None = None,
            include_tests: bool = False) -> Corpus:
    """Files under `paths` (files or folders), in a stable order, with the skip report. A crate's
    test and example code is left out (each file with its reason) unless `include_tests`."""
    corpus = Corpus()
    for path, rel, lang in list_sources(paths, corpus.skipped, langs):
        result = read_source(path, rel, lang, max_bytes)
        (corpus.skipped if isinstance(result, Skip) else corpus.files).append(result)
    kept, tests = split_test_code(corpus.files)
    if not include_tests:
        corpus.files = kept
        corpus.skipped += [Skip(f.rel, f.test_code) for f in tests]
    return corpus


def crate_root_of(path: Path) -> Path | None:
    for parent in path.parents:
        if (parent / "Cargo.toml").exists():
            return parent
    return None


def split_test_code(files: list[SourceFile]) -> tuple[list[SourceFile], list[SourceFile]]:
    """(product files, test code, each with its `test_code` reason)."""
    roots = {id(f): crate_root_of(f.path) for f in files if f.lang == "rust"}
    test_paths = [p for f in files if roots.get(id(f)) for p in cfg_test_module_paths(f.path, f.text)]
    kept, skipped = [], []
    for f in files:
        f.test_code = test_code_reason(f.path, roots.get(id(f)), test_paths)
        (skipped if f.test_code else kept).append(f)
    return kept, skipped


def test_code_reason(path: Path, crate_root: Path | None, test_paths: list[Path]) -> str | None:
    """Why a crate's file is test or example code (None: product code): a crate's tests/, benches/,
    examples/, and modules only a `#[cfg(test)] mod NAME;` declares (`src/tests.rs`, `src/tests/**`)."""
    if crate_root is None:
        return None
    top = path.relative_to(crate_root).parts[0]
    if top in TEST_CODE_DIRS:
        return f"test or example code: {TEST_CODE_DIRS[top]}"
    if any(path == p or p in path.parents for p in test_paths):
        return "test or example code: a module only `#[cfg(test)]` declares"
    return None


def cfg_test_module_paths(path: Path, text: str) -> list[Path]:
    """Where the `#[cfg(test)] mod NAME;` lines of one file put their modules (file and folder)."""
    if "cfg(test)" not in text:
        return []
    own = path.parent if path.name in ("lib.rs", "main.rs", "mod.rs") else path.parent / path.stem
    out = []
    for m in TEST_MODULE.finditer(text):
        attr = PATH_ATTR.search(m.group(1))
        if attr:
            out.append((path.parent / attr.group(1)).resolve())
        else:
            out += [own / f"{m.group(2)}.rs", own / m.group(2)]
    return out


def list_sources(paths: list[str | Path], skipped: list[Skip], langs: set[str] | None = None):
    """(path, rel, lang) of each candidate file under `paths`, in a stable order, unread; what is
    left out before reading is appended to `skipped`."""
    for raw in paths:
        root = Path(raw).resolve()
        if not root.exists():
            skipped.append(Skip(str(raw), "no such file or directory"))
            continue
        # With several roots a path starts with its root's name: two crates' `src/lib.rs` differ.
        base = root.parent if root.is_file() or len(paths) > 1 else root
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
