"""`synth.toml`: one validated config for `synth plan`, `synth run` and `synth refresh`.
Unknown keys are errors with a suggestion; a lane that names a model that is not defined is an
error; relative paths are relative to the config file."""
from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, ValidationError, create_model, field_validator, model_validator

from oracles.errors import InputError
from oracles.settings import OracleSettings
from synth.assemble.mix import Dedup, Mix
from synth.settings.fit import TokenSettings
from synth.llm.models import ModelSettings
from synth.llm.providers import provider

from synth.settings.strict import Strict, explain


class ConfigError(InputError):
    pass


class SourceSettings(Strict):
    path: str  # a file or a folder
    lang: Literal["rust", "vox"] | None = None  # None: every language found under the path
    include_tests: bool = False  # keep test and example code (tests/, benches/, examples/, #[cfg(test)])


class BudgetSettings(Strict):
    max_spend_usd: float = Field(0.0, ge=0)  # 0: no paid call is made


class AssembleSettings(Strict):
    val_share: float = Field(0.1, ge=0, lt=1)
    seq_len: int = Field(Mix.model_fields["seq_len"].default, gt=0)  # as `synth assemble` packs
    near_duplicates: bool = Dedup.model_fields["near_duplicates"].default
    licenses: list[str] = Field(default_factory=list)  # SPDX ids a row's licence must satisfy; empty: all


class TaskSettings(Strict):
    """[tasks]: which verified rows become RL and held-out tasks (RUN/tasks/rl.jsonl and
    heldout.jsonl) instead of SFT rows (synth/tasks/split.py)."""
    enabled: bool | None = None  # None: when a lane that writes tasks by default runs (the doc lane)
    families: list[Literal["codegen", "repair"]] = Field(default_factory=lambda: ["codegen", "repair"])
    heldout_crates: list[str] = Field(default_factory=list)  # crate folder names; else a seeded share of them
    heldout_share: float = Field(0.2, ge=0, lt=1)
    rl_share: float = Field(0.2, ge=0, lt=1)  # of the training side's declarations, those that become RL tasks
    # > 0: at most this many tasks of one answer group (a declaration's repair mutants), seeded;
    # its tasks rise and fall together, so more of them add cost more than information
    per_group: int = Field(0, ge=0)


class RunSettings(Strict):
    out: str = "runs/latest"
    cache_dir: str = "cache"
    seed: int = 0
    prices: str | None = None  # price table override (JSON)
    batch: bool = False  # refresh: LLM calls through the batch APIs (half price, answers next run)
    # Where compiler checks and model calls run: here, or on a Ray cluster (synth/executor/)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # None: a local Ray instance started for the run; "auto" or ray://host:port
    ray_batch: int = Field(128, gt=0)  # candidates per cluster task (its overhead is paid once per batch)


class SynthSettings(Strict):
    run: RunSettings = Field(default_factory=RunSettings)
    sources: list[SourceSettings] = Field(min_length=1)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    models: dict[str, ModelSettings] = Field(default_factory=dict)
    lanes: dict = Field(default_factory=dict)  # one table per lane, typed by `config_model(lanes)`
    oracles: OracleSettings = Field(default_factory=OracleSettings)
    assemble: AssembleSettings = Field(default_factory=AssembleSettings)
    tasks: TaskSettings = Field(default_factory=TaskSettings)
    tokens: TokenSettings = Field(default_factory=TokenSettings)  # rows that fit the model being trained
    _notes: list[str] = PrivateAttr(default_factory=list)  # what the config should say differently

    @property
    def notes(self) -> list[str]:
        return self._notes

    @field_validator("models")
    @classmethod
    def _providers_exist(cls, models: dict) -> dict:
        for model in models.values():
            provider(model.provider)  # UnknownProvider (a ValueError) names the known ones
        return models

    @model_validator(mode="after")
    def _models_exist(self) -> "SynthSettings":
        for name, lane in self.lane_settings().items():
            if not lane.enabled:
                continue
            if "model" in type(lane).model_fields and not lane.model:
                raise ValueError(f"lanes.{name} is enabled but names no model (add model = \"...\")")
            for ref in lane.model_refs():
                if ref not in self.models:
                    hint = difflib.get_close_matches(ref, list(self.models), n=1)
                    raise ValueError(f"lanes.{name} uses model {ref!r}, which [models] does not define"
                                     + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            lane.check()
        self._move_deprecated_task_keys()
        return self

    def _move_deprecated_task_keys(self) -> None:
        """[lanes.doclane] heldout_crates / heldout_share / rl_share are [tasks] keys now: still read."""
        doclane = self.lane_settings().get("doclane")
        moved = {key: getattr(doclane, key) for key in ("heldout_crates", "heldout_share", "rl_share")
                 if doclane is not None and getattr(doclane, key, None) is not None}
        if moved:
            self.tasks = self.tasks.model_copy(update=moved)
            self._notes.append(f"[lanes.doclane] {', '.join(moved)}: deprecated, set them in [tasks] "
                               "(read there this time)")

    def writes_tasks(self, lanes: dict) -> bool:
        """[tasks] enabled, or by default when an enabled lane writes them by default (the doc lane)."""
        if self.tasks.enabled is not None:
            return self.tasks.enabled
        return any(lane.tasks_by_default and self.lane_settings()[name].enabled for name, lane in lanes.items()
                   if name in self.lane_settings())

    def lane_settings(self) -> dict:
        """name -> the lane's settings (empty until the config is typed by the lanes)."""
        if isinstance(self.lanes, dict):
            return {}
        return {name: getattr(self.lanes, name) for name in type(self.lanes).model_fields}


def config_model(lanes: dict) -> type[SynthSettings]:
    """SynthSettings whose [lanes] has one table per lane, typed by the lane's settings class (so
    an unknown lane or key is an error with a suggestion, as everywhere else)."""
    tables = create_model("Lanes", __base__=Strict,
                          **{name: (lane.Settings, Field(default_factory=lane.Settings)) for name, lane in lanes.items()})
    return create_model("SynthSettings", __base__=SynthSettings, lanes=(tables, Field(default_factory=tables)))


def load_config(path: str | Path, lanes: dict | None = None) -> SynthSettings:
    """The config at `path`; with `lanes` (the registry of synth/lanes), its [lanes] tables typed
    and checked by their lanes."""
    path = Path(path)
    model = config_model(lanes) if lanes is not None else SynthSettings
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such config file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    renamed = "stages" in data and "lanes" not in data  # the old name of [lanes]: still read, with a note
    if renamed:
        data["lanes"] = data.pop("stages")
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        message = explain(model, exc)
        if renamed:  # the tables named as the file names them
            message = message.replace("'lanes.", "'stages.")
        raise ConfigError(f"{path}: {message}") from exc
    if renamed:
        config.notes.append("[stages.*] is now [lanes.*]: rename the tables (read as [lanes.*] this time)")
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
    config.tokens.tokenizer = resolve(config.tokens.tokenizer)
    for name, model in config.models.items():
        if model.is_local:  # a model folder (and adapter) next to the config, like every other path; one a
            # training run has not written yet is the RFT lane's to say (it samples from it once it exists)
            config.models[name] = model.model_copy(update={"model": resolve(model.model),
                                                           "adapter": resolve(model.adapter)})
    for lane in config.lane_settings().values():
        lane.resolve_paths(resolve)
    return config
