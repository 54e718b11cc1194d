"""The row model: every training row, whatever its task, carries these fields."""
from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oracles.verdict import Diagnostic, TestOutcome, Verdict

SCHEMA_VERSION = 1


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant", "tool"]
    content: str


class Verification(BaseModel):
    """The gate's verdict, stored in the row so anyone can see (and re-check) why it is there."""

    oracle: str
    toolchain: str
    passed: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    tests: TestOutcome | None = None
    isolation: str | None = None  # the sandbox the check ran in: bwrap | unshare | none
    scope: Literal["standalone", "crate"] = "standalone"  # checked as a file alone, or inside its crate
    crate: dict | None = None  # scope "crate": name, version, edition, features, file and byte span

    @classmethod
    def of(cls, verdict: Verdict) -> "Verification":
        return cls(oracle=verdict.oracle, toolchain=verdict.toolchain, passed=verdict.passed,
                   diagnostics=[d.without_fixes() for d in verdict.diagnostics], tests=verdict.tests, isolation=verdict.sandbox.get("isolation"))


class Provenance(BaseModel):
    source_path: str
    decl_hash: str  # the declaration's content: equal for two identical blocks in two files
    decl_id: str | None = None  # its place (path and position): tells those two apart
    stage: str  # the lane that made the row (its published name: rows keep the key)
    operator: str | None = None
    model: str | None = None
    prompt_template_hash: str | None = None
    seed: int
    # where the code comes from (synth/extract/package.py): crate (else source folder), version, licence
    source_name: str | None = None
    source_version: str | None = None
    license: str | None = None  # an SPDX expression, or "unknown"


CODE_TASKS = {"repair", "codegen", "rft", "selfrepair"}


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")  # extra fields by task are fine

    id: str = ""
    lang: Literal["rust", "vox", "json"]  # json: calls to a live MCP server's tools
    lane: str
    task: str
    messages: list[Message]
    prompt: str
    response: str
    verification: Verification
    provenance: Provenance
    cost_usd: float = 0.0
    mix_weight: float = 1.0
    schema_version: int = SCHEMA_VERSION
    checked_source: str | None = None
    checked_broken_source: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Row":
        users = [m.content for m in self.messages if m.role == "user"]
        assistants = [m.content for m in self.messages if m.role == "assistant"]
        if not users or not assistants:
            raise ValueError("messages need a user and an assistant turn")
        if self.prompt != users[-1] or self.response != assistants[-1]:
            raise ValueError("prompt/response must equal the last user/assistant messages")
        if self.task in CODE_TASKS and not self.checked_source:
            raise ValueError(f"a {self.task} row must carry checked_source (what the oracle accepted)")
        if self.task in ("repair", "selfrepair") and not self.checked_broken_source:
            raise ValueError(f"a {self.task} row must carry checked_broken_source (what the oracle rejected)")
        if not self.id:
            self.id = row_id(self)
        return self


def row_id(row: Row) -> str:
    """Stable across runs (content and place, no counters) and unique in a run: two identical
    declarations in two files give two ids. Merging rows by content is the assembler's own,
    counted decision (dedup), never an id collision."""
    p = row.provenance
    key = json.dumps([row.lang, row.task, row.prompt, row.response, p.decl_hash, p.source_path, p.decl_id,
                      p.operator], ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def make_row(*, lang, lane, task, prompt, response, verdict: Verdict, provenance: Provenance,
             system: str | None = None, **extra) -> Row:
    messages = ([Message(role="system", content=system)] if system else []) + [
        Message(role="user", content=prompt), Message(role="assistant", content=response)]
    return Row(lang=lang, lane=lane, task=task, messages=messages, prompt=prompt, response=response,
               verification=Verification.of(verdict), provenance=provenance, **extra)
