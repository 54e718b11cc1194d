"""`synth.toml`: one validated config for `synth plan`, `synth run` and `synth refresh`.
Unknown keys are errors with a suggestion; a stage that names a model that is not defined is an
error; relative paths are relative to the config file."""
from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from .strict import Strict, explain


class ConfigError(ValueError):
    pass


class SourceConfig(Strict):
    path: str  # a file or a folder
    lang: Literal["rust", "vox"]


class Budget(Strict):
    max_spend_usd: float = Field(0.0, ge=0)  # 0: no paid call is made


class ModelConfig(Strict):
    provider: Literal["openai", "anthropic"]
    model: str
    base_url: str | None = None  # else the SDK's OPENAI_BASE_URL / ANTHROPIC_BASE_URL
    max_tokens: int = Field(600, gt=0)
    temperature: float | None = None
    free: bool = False  # a local server: costs nothing, needs no price


class RepairStage(Strict):
    enabled: bool = True
    max_share: float = Field(0.25, gt=0, le=1)
    diff: bool = False


class DocLaneStage(Strict):
    """Documented functions as tasks (no LLM); with it the run writes tasks/rl.jsonl and
    tasks/heldout.jsonl from the verified rows of the lanes that pose tasks."""
    enabled: bool = False
    heldout_crates: list[str] = Field(default_factory=list)  # crate folder names; else a share of them
    heldout_share: float = Field(0.2, ge=0, lt=1)
    rl_share: float = Field(0.2, ge=0, lt=1)


class BacktranslateStage(Strict):
    enabled: bool = False
    model: str = ""
    judge: str | None = None  # default: the same model
    max_attempts: int = Field(3, gt=0)
    limit: int = Field(0, ge=0)  # at most this many declarations (0: all)
    workers: int = Field(4, gt=0)


class RftStage(Strict):
    enabled: bool = False
    model: str = ""
    k: int = Field(4, gt=0)
    cap_per_task: int = Field(2, gt=0)


class ToolcallsStage(Strict):
    enabled: bool = False
    model: str = ""
    tools: str = ""  # a JSON file of MCP tool definitions (the `tools/list` result)
    server: list[str] = Field(default_factory=list)  # command + args of the live MCP server (stdio):
    # read-only tools' calls are executed there and rows whose call fails are rejected
    per_tool: int = Field(2, gt=0)
    k: int = Field(10, gt=1)


class Stages(Strict):
    repair: RepairStage = Field(default_factory=RepairStage)
    doclane: DocLaneStage = Field(default_factory=DocLaneStage)
    backtranslate: BacktranslateStage = Field(default_factory=BacktranslateStage)
    rft: RftStage = Field(default_factory=RftStage)
    toolcalls: ToolcallsStage = Field(default_factory=ToolcallsStage)


class OracleConfig(Strict):
    rustc: str = "rustc"
    edition: str = "2021"
    vox: str = "vox"
    jobs: int = Field(2, gt=0)


class AssembleConfig(Strict):
    val_share: float = Field(0.1, ge=0, lt=1)
    seq_len: int = Field(2048, gt=0)
    near_duplicates: bool = False


class RunSettings(Strict):
    out: str = "runs/latest"
    cache_dir: str = "cache"
    seed: int = 0
    prices: str | None = None  # price table override (JSON)
    batch: bool = False  # refresh: LLM calls through the batch APIs (half price, answers next run)


class SynthConfig(Strict):
    run: RunSettings = Field(default_factory=RunSettings)
    sources: list[SourceConfig] = Field(min_length=1)
    budget: Budget = Field(default_factory=Budget)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    stages: Stages = Field(default_factory=Stages)
    oracles: OracleConfig = Field(default_factory=OracleConfig)
    assemble: AssembleConfig = Field(default_factory=AssembleConfig)

    @model_validator(mode="after")
    def _models_exist(self) -> "SynthConfig":
        for name in Stages.model_fields:
            stage = getattr(self.stages, name)
            refs = [getattr(stage, "model", None), getattr(stage, "judge", None)]
            if not getattr(stage, "enabled", False):
                continue
            if hasattr(stage, "model") and not stage.model:
                raise ValueError(f"stages.{name} is enabled but names no model (add model = \"...\")")
            for ref in filter(None, refs):
                if ref not in self.models:
                    hint = difflib.get_close_matches(ref, list(self.models), n=1)
                    raise ValueError(f"stages.{name} uses model {ref!r}, which [models] does not define"
                                     + (f" (did you mean {hint[0]!r}?)" if hint else ""))
        if self.stages.toolcalls.enabled and not self.stages.toolcalls.tools:
            raise ValueError("stages.toolcalls is enabled but names no tools file")
        return self

    def paid_stages(self) -> list[str]:
        """Enabled stages that call a model that is not free."""
        out = []
        for name in ("backtranslate", "rft", "toolcalls"):
            stage = getattr(self.stages, name)
            if stage.enabled and not all(self.models[m].free for m in filter(None, [stage.model,
                                                                                  getattr(stage, "judge", None)])):
                out.append(name)
        return out


def load_config(path: str | Path) -> SynthConfig:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such config file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        config = SynthConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {explain(SynthConfig, exc)}") from exc
    base = path.parent.resolve()

    def resolve(p: str | None) -> str | None:
        return p if not p or Path(p).is_absolute() else str((base / p).resolve())
    for source in config.sources:
        source.path = resolve(source.path)
        if not Path(source.path).exists():
            raise ConfigError(f"{path}: sources: {source.path} does not exist")
    config.run.out = resolve(config.run.out)
    config.run.cache_dir = resolve(config.run.cache_dir)
    config.run.prices = resolve(config.run.prices)
    config.stages.toolcalls.tools = resolve(config.stages.toolcalls.tools) or ""
    config.stages.toolcalls.server = [resolve(a) if a.endswith(".py") else a for a in config.stages.toolcalls.server]
    return config
