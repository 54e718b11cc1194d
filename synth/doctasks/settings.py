"""The doc lane's settings: `[lanes.doclane]` (synth/doctasks/documented.py is its engine)."""
from __future__ import annotations

from pydantic import Field

from synth.settings.strict import ACROSS_ITEMS, LaneSettings


class DocLaneSettings(LaneSettings):
    # deprecated: [tasks] heldout_crates / heldout_share / rl_share (still read, moved there with a note)
    heldout_crates: list[str] | None = Field(None, json_schema_extra=ACROSS_ITEMS)
    heldout_share: float | None = Field(None, ge=0, lt=1, json_schema_extra=ACROSS_ITEMS)
    rl_share: float | None = Field(None, ge=0, lt=1, json_schema_extra=ACROSS_ITEMS)
    # a function whose standalone file fails is verified in its crate (an SFT row, never a task)
    in_crate: bool = True
