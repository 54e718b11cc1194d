"""The settings of the generation lanes' engines, each a `[lanes.<name>]` table taken whole:
back-translation (synth/generation/backtranslate.py) and rejection sampling (synth/generation/rft.py)."""
from __future__ import annotations

from pydantic import Field

from synth.settings.strict import ACROSS_ITEMS, LaneSettings


class BacktranslateSettings(LaneSettings):
    """[lanes.backtranslate], taken whole by `run_backtranslation` with the [models] it names."""
    model: str = ""  # writes the instruction
    regenerator: str | None = None  # writes code from the instruction (default: the writer)
    judge: str | None = None  # rates the instruction (default: the writer)
    max_attempts: int = Field(3, gt=0)
    limit: int = Field(0, ge=0, json_schema_extra=ACROSS_ITEMS)  # at most this many declarations (0: all)
    workers: int = Field(4, gt=0, json_schema_extra=ACROSS_ITEMS)


class RftSettings(LaneSettings):
    """[lanes.rft], taken whole by `run_rft`."""
    model: str = ""
    k: int = Field(4, gt=0)  # samples per task
    cap_per_task: int = Field(2, gt=0)  # distinct passing samples kept per task
    families: list[str] = Field(default_factory=lambda: ["codegen", "repair"], json_schema_extra=ACROSS_ITEMS)  # which tasks are sampled
    # self-repair: each failing attempt (distinct code that defines what was asked, which the compiler
    # rejected) goes back with rustc's errors for this many tries (0: off); a try that passes the judge
    # is a row of task `selfrepair` (origin: the model's own mistake)
    self_repair: int = Field(0, ge=0)
    self_repair_per_task: int = Field(1, gt=0)  # failing attempts of one task sent back
    # where no try fixes an attempt, a row with the task's verified reference as the fix (labelled `fix: reference`)
    reference_fixes: bool = False
    # a sample that counts also passes its crate's own tests where they pass as the crate is (as
    # `[eval] crate_tests` judges): a wrong value that compiles is no row; runs kept in the cache's verdicts
    crate_tests: bool = False
    # only the tasks [tasks] makes RL tasks (expert iteration: the policy's own answers to them join SFT)
    only_rl: bool = Field(False, json_schema_extra=ACROSS_ITEMS)
    # at most this many tasks (0: all): those first in a seeded order of their ids, so an edit
    # elsewhere does not change which ones are taken
    limit: int = Field(0, ge=0, json_schema_extra=ACROSS_ITEMS)
