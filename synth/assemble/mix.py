"""The mix file (TOML): which row files go in, with what weight, sampled how, checked how."""
from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oracles.errors import InputError, MissingInput


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    path: str  # a rows JSONL file, or a run directory (all of its rows/*.jsonl)
    weight: float = 1.0  # becomes each row's mix_weight: the trainer's per-row loss weight
    sample_rate: float = 1.0
    max_rows: int = 0  # 0: no cap
    optional: bool = False
    include_lanes: list[str] = Field(default_factory=list)  # empty: every lane
    exclude_lanes: list[str] = Field(default_factory=list)

    @field_validator("sample_rate")
    @classmethod
    def _rate(cls, v):
        if not 0 <= v <= 1:
            raise ValueError("sample_rate must be in [0, 1]")
        return v

    @field_validator("weight")
    @classmethod
    def _weight(cls, v):
        if v <= 0:
            raise ValueError("weight must be positive (leave the source out instead)")
        return v


class Readiness(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_rows: int = 0
    min_unique_ratio: float = 0.0  # unique answers / rows, before dedup
    min_compile_pass: float = 0.0  # rows whose verification passed / rows, before gating


class Dedup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    near_duplicates: bool = False  # MinHash over answer tokens
    threshold: float = 0.85
    num_perm: int = 64


class Mix(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    seq_len: int = 2048
    strict: bool = False
    sources: list[Source]
    val_share: dict[str, float] = Field(default_factory=lambda: {"default": 0.05})
    readiness: dict[str, Readiness] = Field(default_factory=dict)  # by lane ("default" for all)
    dedup: Dedup = Field(default_factory=Dedup)
    bench: list[str] = Field(default_factory=list)  # held-out bench files or folders
    ngram: int = 8
    # SPDX ids a row's licence must satisfy (synth/extract/package.py); empty: every row, counted
    licenses: list[str] = Field(default_factory=list)

    def share_for(self, lane: str) -> float:
        return self.val_share.get(lane, self.val_share.get("default", 0.05))

    def readiness_for(self, lane: str) -> Readiness | None:
        return self.readiness.get(lane) or self.readiness.get("default")


def load_mix(path: str | Path) -> Mix:
    """A validated mix; relative source and bench paths are relative to the mix file."""
    path = Path(path)
    try:
        mix = Mix.model_validate(tomllib.loads(path.read_text()))
    except FileNotFoundError as exc:
        raise MissingInput(f"{path}: no such mix file") from exc
    except (ValidationError, ValueError) as exc:  # tomllib's errors are ValueErrors
        raise InputError(f"{path}: invalid mix file: {exc}") from exc
    for source in mix.sources:
        if not Path(source.path).is_absolute():
            source.path = str((path.parent / source.path).resolve())
    mix.bench = [b if Path(b).is_absolute() else str((path.parent / b).resolve()) for b in mix.bench]
    return mix


def unit(*parts) -> float:
    """A seeded uniform number in [0, 1) from its parts: stable across runs and machines."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
