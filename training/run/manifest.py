"""The run manifest: what this run really was. The resolved trainer config (what the trainer got,
not what the profile said), the git commit and dirty flag sampled at launch, the data fingerprint,
library versions and the step-time distribution. A checkpoint carries the fingerprint of the data
it was trained on, and resuming it on other data is refused."""
from __future__ import annotations

import importlib.metadata
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

from transformers import TrainerCallback

from oracles.errors import InputError
from synth.rows.jsonl import write_json

REPO = Path(__file__).resolve().parents[2]
FINGERPRINT_FILE = "synth_data_fingerprint.json"
LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")


class ResumeRefused(InputError):
    pass


def git_state(repo: Path = REPO) -> dict:
    """Commit and dirty flag at launch (not at the end: the tree may change during a long run)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=30)
    head = git("rev-parse", "HEAD")
    if head.returncode:
        return {"commit": None, "dirty": None, "note": "not a git checkout"}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def library_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def step_time_stats(durations: list[float]) -> dict:
    """n, min, p50, p99, max in seconds; the first step (compilation, warm-up) is excluded."""
    steady = sorted(durations[1:])
    if not steady:
        return {"n": 0}
    p99 = steady[min(len(steady) - 1, max(0, round(0.99 * len(steady)) - 1))]
    return {"n": len(steady), "min": round(steady[0], 6), "p50": round(statistics.median(steady), 6),
            "p99": round(p99, 6), "max": round(steady[-1], 6), "first_step": round(durations[0], 6)}


class RunRecorder(TrainerCallback):
    """Times each optimizer step, keeps the logged metrics, and stamps checkpoints with the data
    fingerprint."""

    def __init__(self, data_fingerprint: str):
        self.fingerprint = data_fingerprint
        self.durations: list[float] = []
        self.logs: list[dict] = []
        self._start = None

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self._start is not None:
            self.durations.append(time.perf_counter() - self._start)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs:
            self.logs.append({"step": state.global_step, **{k: v for k, v in logs.items()
                                                             if isinstance(v, (int, float))}})

    def on_save(self, args, state, control, **kwargs):
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if checkpoint.is_dir():
            write_json(checkpoint / FINGERPRINT_FILE, {"data_fingerprint": self.fingerprint})


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    checkpoints = sorted(Path(output_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return checkpoints[-1] if checkpoints else None


def check_resume(output_dir: str | Path, data_fingerprint: str) -> Path:
    """The checkpoint to resume, after checking it was trained on this data."""
    checkpoint = latest_checkpoint(output_dir)
    if checkpoint is None:
        raise ResumeRefused(f"{output_dir}: no checkpoint to resume")
    stamp = checkpoint / FINGERPRINT_FILE
    if not stamp.exists():
        raise ResumeRefused(f"{checkpoint}: no data fingerprint recorded; cannot tell what it was trained on")
    trained_on = json.loads(stamp.read_text())["data_fingerprint"]
    if trained_on != data_fingerprint:
        raise ResumeRefused(f"{checkpoint} was trained on data {trained_on}, this run's data is {data_fingerprint}; "
                            "start a new run (or point `data` back at the snapshot it was trained on)")
    return checkpoint


def write_manifest(out_dir: str | Path, manifest: dict) -> Path:
    path = Path(out_dir) / "run_manifest.json"
    write_json(path, json.loads(json.dumps(manifest, default=str)))
    return path
