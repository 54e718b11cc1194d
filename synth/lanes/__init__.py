"""The lanes, in the order `synth run` runs them. `run`, `plan` and `refresh` loop over this
registry and never name a lane: a new lane is one module beside these and one `register` line."""
from __future__ import annotations

from .backtranslate import BacktranslateLane
from .base import Lane
from .doclane import DocLane
from .repair import RepairLane
from .rft import RftLane
from .toolcalls import ToolcallsLane

LANES: dict[str, Lane] = {}


def register(lane: Lane) -> Lane:
    """Add a lane (after those it needs); its name is its [lanes.<name>] table, its rejected/<name>.jsonl."""
    missing = [need for need in lane.needs if need not in LANES]
    if missing:
        raise ValueError(f"lane {lane.name!r} needs {missing}, which are not registered before it")
    LANES[lane.name] = lane
    return lane


for _lane in (RepairLane(), DocLane(), BacktranslateLane(), RftLane(), ToolcallsLane()):
    register(_lane)
