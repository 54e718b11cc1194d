"""The doc lane (no LLM): each documented function becomes a task whose instruction is its own
doc summary and signature, with the declarations it compiles with shown, and whose answer is the
verified declaration (synth/doctasks/documented.py). With it enabled, the run also writes
tasks/rl.jsonl and tasks/heldout.jsonl from the verified rows of the lanes that pose tasks
(unless [tasks] enabled = false; synth/assemble/tasks.py): held-out crates apart, no answer group
on two sides."""
from __future__ import annotations

from pydantic import Field

from synth.doctasks.documented import doc_candidates, doc_lane
from synth.store import fingerprint
from synth.prompts import template_hash

from .base import Lane, LaneSettings, by_declaration, toolchain_of
from .estimate import plan_row


class DocLaneSettings(LaneSettings):
    # deprecated: [tasks] heldout_crates / heldout_share / rl_share (still read, moved there with a note)
    heldout_crates: list[str] | None = None
    heldout_share: float | None = Field(None, ge=0, lt=1)
    rl_share: float | None = Field(None, ge=0, lt=1)
    # a function whose standalone file fails is verified in its crate (an SFT row, never a task)
    in_crate: bool = True


class DocLane(Lane):
    name = "doclane"
    Settings = DocLaneSettings
    poses_tasks = True
    tasks_by_default = True  # with it, a run writes the task files unless [tasks] enabled = false

    def items(self, ctx, settings, decls):
        return doc_candidates(decls)

    def fingerprint(self, ctx, settings, lang, oracle):
        crate = _crate_oracle(ctx, settings)
        return fingerprint("doclane", lang, ctx.seed, toolchain_of(oracle), oracle.flags, template_hash("system"),
                           *([crate.toolchain, crate.flags] if crate else []), *ctx.fit.fingerprint)

    def process(self, ctx, settings, todo, oracle, out):
        rows, rejected = doc_lane(todo, oracle, ctx.seed, _crate_oracle(ctx, settings), ctx.fit)
        return by_declaration(todo, rows, rejected)

    def finish(self, ctx, settings, out, items):
        out.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))

    def plan(self, ctx, settings, pending, estimate):
        return plan_row("doclane", "-", items=len(pending), rows=len(pending), compile_candidates=len(pending),
                        compile_s_per=estimate.compile_rate, basis="default")


def _crate_oracle(ctx, settings: DocLaneSettings):
    return ctx.crate_oracle if settings.in_crate else None
