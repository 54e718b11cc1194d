"""The oracle keys of `synth.toml` ([oracles]) and of a training profile ([oracle])."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OracleSettings(BaseModel):
    """The oracle keys of `synth.toml` ([oracles]) and of a training profile ([oracle])."""
    model_config = ConfigDict(extra="forbid")
    rustc: str = "rustc"
    edition: str = "2021"
    vox: str = "vox"
    jobs: int = Field(2, gt=0)
