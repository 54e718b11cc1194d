"""`synth mutate`: a run with only the repair lane, over paths instead of a config file. It spends
nothing, and what it writes is a run's (rows/repair.jsonl.zst, rejected/repair.jsonl, train/val,
manifest, snapshots/, stats/run.json): one writer of rows for every command that makes them."""
from __future__ import annotations

from pathlib import Path

from oracles.settings import OracleSettings
from synth.mutate.settings import RepairSettings
from synth.settings.config import RunSettings, SourceSettings, SynthSettings, TaskSettings, config_model


def repair_only(paths: list[str | Path], out: str | Path, cache_dir: str | Path, *, seed: int = 0,
                repair: RepairSettings | None = None, oracles: OracleSettings | None = None,
                include_tests: bool = False, executor: str = "local", ray_address: str | None = None) -> SynthSettings:
    """The config of a run that makes repair rows from `paths` (every language found under them)
    and nothing else: every other lane off, no task files (nothing is held out)."""
    from synth.lanes import LANES
    lanes = {name: {"enabled": False} for name in LANES}
    lanes["repair"] = (repair or RepairSettings()).model_dump()
    return config_model(LANES)(
        run=RunSettings(out=str(Path(out).resolve()), cache_dir=str(Path(cache_dir).resolve()), seed=seed,
                        executor=executor, ray_address=ray_address),
        sources=[SourceSettings(path=str(Path(p).resolve()), include_tests=include_tests) for p in paths],
        lanes=lanes, oracles=oracles or OracleSettings(), tasks=TaskSettings(enabled=False))
