"""The repair lane's settings, apart from its engine (synth/mutate/repair.py) so that reading them,
as the command line does for its flags' defaults, loads nothing else."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from synth.settings.strict import ACROSS_ITEMS, LaneSettings


class RepairSettings(LaneSettings):
    """[lanes.repair], taken whole by `repair_rows` (and by `synth mutate`, whose flags default to it)."""
    enabled: bool = Field(True, json_schema_extra=ACROSS_ITEMS)
    max_share: float = Field(0.25, gt=0, le=1, json_schema_extra=ACROSS_ITEMS)  # no operator and no diagnostic code above this share of the rows
    # rows whose mutant the compiler's help alone fixes (compiler_solvable) at most this share of the
    # rows trained on (a held-out crate's rows are left as they are: they are the measure). Off by
    # default: on the loop, capping them at 0.25 (from their natural ~50%) cost SFT 7.1 points
    # [+2.0, +13.3] on held-out repair, and 3.2 [-2.3, +8.7] on the tasks the compiler's help fails
    max_compiler_solvable: float = Field(1.0, gt=0, le=1, json_schema_extra=ACROSS_ITEMS)
    diff: bool = False  # answer with a unified diff instead of the fixed declaration
    # Rust declarations whose standalone file fails are verified in their crate ("fallback"), or
    # all declarations of a crate are ("always"), or none ("never"). Needs a crate oracle.
    in_crate: Literal["fallback", "always", "never"] = "fallback"
