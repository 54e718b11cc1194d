"""What every lane's settings are: its `[lanes.<name>]` table (read from `[stages.<name>]` too,
with a note). Each lane's own class adds its keys and lives beside the engine that takes it whole,
so each knob has one default, written once."""
from __future__ import annotations

from synth.strict import Strict


class LaneSettings(Strict):
    """The settings every lane has; a lane's own settings class adds its keys."""
    enabled: bool = False

    def model_refs(self) -> list[str]:
        """The [models] this lane calls (none for an LLM-free lane)."""
        return [ref for ref in (getattr(self, "model", None), getattr(self, "judge", None),
                                getattr(self, "regenerator", None)) if ref]

    def check(self) -> None:
        """Rules across keys of an enabled lane (ValueError says what is missing)."""

    def resolve_paths(self, resolve) -> None:
        """Make the lane's file settings relative to the config file (`resolve(path)`)."""
