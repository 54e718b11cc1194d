"""The one shape every oracle answers in: a verdict per candidate."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

# the oracles' codes for "it failed, and said nothing a fix could follow" (an exit status only)
EXIT_ONLY = frozenset({"cargo-exit", "rustc-crash", "vox-exit"})


class Candidate(BaseModel):
    """Source text to check. `context_fingerprint` names whatever else the verdict depends on
    (for a crate candidate: the crate's content hash and the splice location)."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    context_fingerprint: str = ""

    @classmethod
    def of(cls, text: str, context_fingerprint: str = "") -> "Candidate":
        digest = hashlib.sha256((context_fingerprint + "\0" + text).encode()).hexdigest()[:16]
        return cls(id=digest, text=text, context_fingerprint=context_fingerprint)


class Fix(BaseModel):
    """One suggestion the compiler attached to a message: replacements made together, each
    (line, column, end line, end column, text) in the candidate's own text, 1-based, columns in
    characters; `applicability` is rustc's (MachineApplicable, MaybeIncorrect, HasPlaceholders,
    Unspecified)."""

    applicability: str
    edits: list[tuple[int, int, int, int, str]]


class Diagnostic(BaseModel):
    """One compiler message, positioned in the candidate's own text (1-based line/column)."""

    code: str | None = None
    severity: Literal["error", "warning"]
    message: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    label: str | None = None
    notes: list[str] = Field(default_factory=list)
    path: str | None = None  # only for multi-file checks (a crate): the file, relative to its root
    fixes: list[Fix] = Field(default_factory=list)  # rustc's suggestions with their places (not kept in rows)

    @model_serializer(mode="wrap")
    def _without_no_fixes(self, handler):
        """No `fixes` key where there are none: a message without suggestions reads as it always did."""
        data = handler(self)
        if not self.fixes:
            data.pop("fixes", None)
        return data

    def without_fixes(self) -> "Diagnostic":
        """As a row keeps it: the message, without the suggestions' places."""
        return self.model_copy(update={"fixes": []}) if self.fixes else self

    def render(self) -> str:
        """A short human rendering, stable across batched and solo checks."""
        head = f"{self.severity}[{self.code}]" if self.code else self.severity
        where = f" at {self.path + ':' if self.path else ''}{self.line}:{self.column}" if self.line else ""
        text = f"{head}: {self.message}{where}"
        if self.label:
            text += f" ({self.label})"
        return "\n".join([text, *(f"  = {n}" for n in self.notes)])


class TestOutcome(BaseModel):
    passed: int = 0
    failed: int = 0
    total: int = 0
    timed_out: bool = False
    output: str = ""  # the tail of what the tests printed

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.failed == 0 and self.total > 0


class Verdict(BaseModel):
    candidate_id: str
    passed: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    oracle: str
    toolchain: str
    elapsed_s: float = 0.0
    timed_out: bool = False
    tests: TestOutcome | None = None
    mode: str = "solo"  # how it was obtained: solo | batched | crate | cache
    sandbox: dict = Field(default_factory=dict)  # what isolation the run really had

    def same_result(self, other: "Verdict") -> bool:
        """Equal as a compiler answer (ignores timing and how the verdict was obtained)."""
        return (self.passed, self.timed_out, self.diagnostics) == (other.passed, other.timed_out, other.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


# -- a declaration spliced into its crate: the candidate of the in-crate oracles ---------------

SKIP_DIRS = {"target", ".git"}


@dataclass(frozen=True)
class Splice:
    """Replace bytes [start_byte, end_byte) of `path` (relative to the crate root) with `text`."""

    crate_dir: str
    path: str
    start_byte: int
    end_byte: int
    text: str
    features: tuple[str, ...] = ()  # on besides the default ones (the copy it is checked in)

    def fingerprint(self, digest: str | None = None) -> str:
        """`digest`: the crate's crate_hash, when the caller has it."""
        return f"crate:{digest or crate_hash(Path(self.crate_dir))}:{self.path}:{self.start_byte}:{self.end_byte}" + \
            features_key(self.features)

    @property
    def copy(self) -> tuple[str, tuple[str, ...]]:
        """The scratch copy it is checked in: the crate, and the features on besides the default."""
        return self.crate_dir, self.features

    def candidate(self, digest: str | None = None) -> Candidate:
        """Its verdict key's candidate (made once a splice: the crate is hashed for it, unless
        `digest` gives its hash)."""
        made = self.__dict__.get("_candidate")
        if made is None:
            made = Candidate.of(self.text, self.fingerprint(digest))
            object.__setattr__(self, "_candidate", made)
        return made


def splice_candidates(splices: list[Splice]) -> list[Candidate]:
    """Their verdict keys, each crate hashed once (checking that a crate is unchanged walks its
    files: once a splice, that was ms each, seconds for a corpus's mutants)."""
    digests: dict[str, str] = {}
    for splice in splices:
        if splice.crate_dir not in digests:
            digests[splice.crate_dir] = crate_hash(Path(splice.crate_dir))
    return [splice.candidate(digests[splice.crate_dir]) for splice in splices]


def features_key(features: tuple[str, ...]) -> str:
    """How a verdict key names the features on besides the default ones (nothing for none, so
    default-feature keys stay as they were)."""
    return f":features={','.join(features)}" if features else ""


def crate_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


_HASHES: dict[str, tuple[tuple, str]] = {}  # crate folder -> (its files' names, sizes and times; its hash)


def crate_hash(root: Path) -> str:
    """The crate's content, hashed; read again only when a file's size or time changed (every
    mutant's verdict key names its crate: reading the crate each time cost ms a mutant)."""
    files = list(crate_files(root))
    signature = tuple((str(p), st.st_size, st.st_mtime_ns) for p in files for st in [p.stat()])
    known = _HASHES.get(str(root))
    if known is not None and known[0] == signature:
        return known[1]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    _HASHES[str(root)] = (signature, digest.hexdigest()[:16])
    return _HASHES[str(root)][1]


# What a compiler printed, read: shared by the rustc and cargo oracles (a leaf, as this module is).
def json_lines(text: str) -> tuple[list[dict], bool]:
    """The JSON objects of `text`, one a line, and whether a line was cut short (the sandbox keeps
    the first 8 MiB of a stream: output past it is read as cut, not crashed on)."""
    out, cut = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                cut = True
    return out, cut


def cut_note(cap_bytes: int) -> Diagnostic:
    """Said in a verdict whose compiler output ran past the sandbox's cap: its pass or fail stands
    (the exit code), but the diagnostics after the cap are missing, and a reader must know."""
    return Diagnostic(code="output-cut", severity="warning",
                      message=f"the compiler's output ran past {cap_bytes / 2**20:g} MiB: its diagnostics after that are missing")
