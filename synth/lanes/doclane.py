"""The doc lane (no LLM): each documented function becomes a task whose instruction is its own
doc summary and signature, with the declarations it compiles with shown, and whose answer is the
verified declaration (synth/doctasks/documented.py). With it enabled, the run also writes
tasks/rl.jsonl and tasks/heldout.jsonl from the verified rows of the lanes that pose tasks
(unless [tasks] enabled = false; synth/tasks/split.py): held-out crates apart, no answer group
on two sides."""
from __future__ import annotations


from synth.doctasks.settings import DocLaneSettings
from synth.doctasks.documented import doc_candidates, doc_lane

from .base import Lane, by_declaration
from .estimate import FIRST_RUN_S, plan_row


class DocLane(Lane):
    name = "doclane"
    Settings = DocLaneSettings
    poses_tasks = True
    tasks_by_default = True  # with it, a run writes the task files unless [tasks] enabled = false

    def items(self, ctx, settings, decls):
        return doc_candidates(decls)

    def process(self, ctx, settings, todo, oracle, out):
        rows, rejected = doc_lane(todo, oracle, ctx.seed, _crate_oracle(ctx, settings), ctx.fit)
        return by_declaration(todo, rows, rejected)

    def finish(self, ctx, settings, out, items):
        out.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))

    def plan(self, ctx, settings, pending, estimate):
        """Each function is checked once: the lane's own seconds an item in the last run, else the
        first run's reference."""
        measured = estimate.measured.get("doclane") or {}
        known = bool(measured.get("processed") and measured.get("seconds"))
        per_item = measured["seconds"] / measured["processed"] if known else FIRST_RUN_S["doc_item"]
        return plan_row("doclane", "-", items=len(pending), rows=len(pending), compile_candidates=len(pending),
                        compile_s_per=per_item, basis="measured" if known else "default")


def _crate_oracle(ctx, settings: DocLaneSettings):
    return ctx.crate_oracle if settings.in_crate else None
