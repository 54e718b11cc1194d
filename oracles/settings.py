"""The oracle keys of `synth.toml` ([oracles]) and of a training profile ([oracle])."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OracleSettings(BaseModel):
    """The oracle keys of `synth.toml` ([oracles]) and of a training profile ([oracle])."""
    model_config = ConfigDict(extra="forbid")
    rustc: str = "rustc"  # the Rust compiler (a path, or a name on PATH)
    cargo: str = "cargo"  # cargo, for declarations checked in their crate
    edition: str = "2021"  # of standalone files (a crate's own manifest says its edition)
    vox: str = "vox"  # the Vox compiler (none is bundled)
    jobs: int = Field(2, gt=0)  # compiler processes at once
