"""What `synth extract` emits: one declaration per line."""
from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field


class Declaration(BaseModel):
    id: str
    lang: str
    kind: str  # fn, method, struct, enum, trait, impl, const, static, type, macro, union | vox heads
    name: str
    path: str  # relative to the scanned root
    start_byte: int
    end_byte: int
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str  # exactly the source bytes of the span (docs and attributes included), decoded
    clean_text: str  # `text` without metadata comments (frontmatter, ANCHOR, STABLE): what answers use
    doc: str = ""
    signature: str = ""
    body: str = ""
    context: str = ""  # what a prompt needs so the declaration is well-posed
    # Rust methods sit inside their impl in a standalone file: context + head + answer + tail.
    wrapper_head: str = ""
    wrapper_tail: str = ""
    owner: str = ""  # methods: their impl (or trait) head, with the trait's own signature of the method
    hash: str
    retired: bool = False  # Vox: uses a retired form
    module_path: str = ""
    attributes: list[str] = Field(default_factory=list)
    self_type: str | None = None  # methods and impls
    trait_name: str | None = None
    params: str = ""
    return_type: str = ""
    near_parse_error: bool = False
    is_test: bool = False
    crate_root: str | None = None  # Rust: the crate folder (absolute)
    crate_path: str | None = None  # Rust: the file, relative to the crate folder (for in-place checks)
    references: list[str] = Field(default_factory=list)  # same-crate items its context carries
    context_truncated: bool = False  # Rust: the context stopped at its size budget (verified in its crate)


def content_hash(lang: str, kind: str, name: str, text: str) -> str:
    """Stable across runs and machines: depends on the declaration's content, not its position."""
    return hashlib.sha256(f"{lang}\0{kind}\0{name}\0{text}".encode()).hexdigest()[:20]


def declaration_id(path: str, kind: str, name: str, start_byte: int, digest: str) -> str:
    return hashlib.sha256(f"{path}\0{kind}\0{name}\0{start_byte}\0{digest}".encode()).hexdigest()[:16]


def standalone_source(decl: Declaration, answer: str | None = None) -> str:
    """The file an oracle checks for this declaration (or for another answer in its place)."""
    answer = decl.clean_text if answer is None else answer
    if decl.wrapper_head:
        return f"{decl.context}{decl.wrapper_head}{answer}\n{decl.wrapper_tail}\n"
    return f"{decl.context}{answer}\n"


def cfg_gated(decl: Declaration) -> bool:
    """The declaration has its own `#[cfg(...)]`: a check of its standalone file may drop it
    unseen (the condition off there), so only a check that shows it compiled verifies it."""
    return any(a.replace(" ", "").startswith("#[cfg(") for a in decl.attributes)


def crate_spot(decl: Declaration) -> dict:
    """Where a declaration checked standalone sits in its crate, so the crate's tests can run an
    answer in its place. The crate's folder is the run's to give (synth/tasks/split.py): a row
    reads the same wherever its sources sit."""
    return {"path": decl.crate_path, "start_byte": decl.start_byte, "end_byte": decl.end_byte, "name": decl.name}


def block_text(text: str) -> str:
    """A declaration as a code block: a method's span starts at its `fn` (column 0) while its
    other lines keep the impl's indentation; take that indentation off them all, so the block
    reads as a whole. Unchanged if any line is indented less (e.g. a multi-line string)."""
    lines = text.split("\n")
    rest = [line for line in lines[1:] if line.strip()]
    if not rest or lines[0][:1] in (" ", "\t"):
        return text
    indent = rest[-1][:len(rest[-1]) - len(rest[-1].lstrip())]
    if not indent or not all(line.startswith(indent) for line in rest):
        return text
    return "\n".join([lines[0], *(line[len(indent):] if line.strip() else line for line in lines[1:])])


def crate_name(decl: Declaration) -> str:
    """The crate a declaration belongs to (its folder name), else its path's first part."""
    return folder_name(decl.crate_root) if decl.crate_root else decl.path.split("/", 1)[0]


def folder_name(root: str) -> str:
    return root.rstrip("/").rsplit("/", 1)[-1]
