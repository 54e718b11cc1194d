"""A toy lane, written the way a new lane is: this one module and one `register` line. It turns
every Rust function with a doc comment of 40 characters or more into a `summary` row (the
function's name -> its doc comment; shorter ones are rejected as too thin), checks nothing
with a compiler and spends nothing; its `prefix` setting is in its fingerprint."""
from __future__ import annotations

from oracles.verdict import Verdict
from synth.lanes.base import Lane, LaneSettings, by_declaration
from synth.lanes.estimate import plan_row
from synth.rows.rejection import Rejection
from synth.rows.row import Provenance, make_row
from synth.rows.keys import fingerprint


class EchoSettings(LaneSettings):
    prefix: str = "Summarize"


class EchoLane(Lane):
    name = "echo"
    Settings = EchoSettings

    def items(self, ctx, settings, decls):
        return [d for d in decls if d.lang == "rust" and d.kind == "fn"]

    def lang(self, item):
        return None  # no oracle needed

    def fingerprint(self, ctx, settings, lang, oracle):
        return fingerprint("echo", settings.prefix, ctx.seed)

    def process(self, ctx, settings, todo, oracle, out):
        rows, rejected = [], []
        for decl in todo:
            if len(decl.doc) < 40:
                rejected.append(Rejection("too thin", "doc comment too thin", {"decl": decl.id}))
                continue
            verdict = Verdict(candidate_id=decl.id, passed=True, oracle="none", toolchain="none")
            rows.append(make_row(lang="rust", lane="rust_summary", task="summary",
                                 prompt=f"{settings.prefix} `{decl.name}`.", response=decl.doc, verdict=verdict,
                                 provenance=Provenance(source_path=decl.path, decl_hash=decl.hash, stage="echo",
                                                       seed=ctx.seed)))
        return by_declaration(todo, rows, rejected)

    def plan(self, ctx, settings, pending, estimate):
        return plan_row("echo", "-", items=len(pending), rows=len(pending))
