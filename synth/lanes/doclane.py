"""The doc lane (no LLM): each documented function becomes a task whose instruction is its own
doc summary and signature, with the declarations it compiles with shown, and whose answer is the
verified declaration (synth/docs/documented.py). With it enabled, the run also writes
tasks/rl.jsonl and tasks/heldout.jsonl from the verified rows of the lanes that pose tasks
(synth/assemble/tasks.py): held-out crates apart, no answer group on two sides."""
from __future__ import annotations

from pydantic import Field

from synth.assemble.tasks import split_outputs
from synth.docs.documented import doc_candidates, doc_lane
from synth.store import fingerprint
from synth.prompts import template_hash

from .base import Lane, StageSettings, by_declaration, toolchain_of
from .estimate import plan_row

TASK_LANES = ("doclane", "backtranslate")  # the lanes whose rows are tasks (a prompt and a checkable answer)


class DocLaneSettings(StageSettings):
    heldout_crates: list[str] = Field(default_factory=list)  # crate folder names; else a share of them
    heldout_share: float = Field(0.2, ge=0, lt=1)
    rl_share: float = Field(0.2, ge=0, lt=1)
    # a function whose standalone file fails is verified in its crate (an SFT row, never a task)
    in_crate: bool = True


class DocLane(Lane):
    name = "doclane"
    Settings = DocLaneSettings

    def items(self, ctx, settings, decls):
        return doc_candidates(decls)

    def fingerprint(self, ctx, settings, lang, oracle):
        crate = _crate_oracle(ctx, settings)
        return fingerprint("doclane", lang, ctx.seed, toolchain_of(oracle), oracle.flags, template_hash("system"),
                           *([crate.toolchain, crate.flags] if crate else []))

    def process(self, ctx, settings, todo, oracle, out):
        rows, rejected = doc_lane(todo, oracle, ctx.seed, _crate_oracle(ctx, settings))
        return by_declaration(todo, rows, rejected)

    def finish(self, ctx, settings, out, items):
        out.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))

    def after_run(self, ctx, settings, outputs: dict) -> str:
        """Split the task lanes' rows into SFT rows and the task files; says what it wrote."""
        lanes = [outputs[name] for name in TASK_LANES if name in outputs]
        return f"tasks: {split_outputs(ctx.out, lanes, **settings.model_dump(exclude={'enabled', 'in_crate'}), seed=ctx.seed)}"

    def plan(self, ctx, settings, pending, estimate):
        return plan_row("doclane", "-", items=len(pending), rows=len(pending), compile_candidates=len(pending),
                        compile_s_per=estimate.compile_rate, basis="default")


def _crate_oracle(ctx, settings: DocLaneSettings):
    return ctx.crate_oracle if settings.in_crate else None
