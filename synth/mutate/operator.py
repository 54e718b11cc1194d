"""A mutation operator: its name, the errors it aims at, and where it can break a declaration
(a list of edits). Rust's operators are in operators/rust.py, Vox's in operators/vox.py; a new operator is
one entry in their list, and it changes the repair lane's fingerprint."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tree_sitter import Node


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Operator:
    name: str
    aims_at: str  # the error codes it is written to provoke
    sites: Callable[[Node, bytes], list[Edit]]
