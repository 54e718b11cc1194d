"""A declaration spliced into its crate: the candidate of the in-crate oracle (oracles/crate.py)."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .verdict import Candidate

SKIP_DIRS = {"target", ".git"}


@dataclass(frozen=True)
class Splice:
    """Replace bytes [start_byte, end_byte) of `path` (relative to the crate root) with `text`."""

    crate_dir: str
    path: str
    start_byte: int
    end_byte: int
    text: str

    def fingerprint(self) -> str:
        return f"crate:{crate_hash(Path(self.crate_dir))}:{self.path}:{self.start_byte}:{self.end_byte}"

    def candidate(self) -> Candidate:
        return Candidate.of(self.text, self.fingerprint())


def crate_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


def crate_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in crate_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
