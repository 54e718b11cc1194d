"""The scratch copy a crate is checked (or tested) in, and what a failed cargo run tells its user.

The copy gets the checkable manifest of oracles/crate_manifest.py (the one the batched crate
oracle uses): detached from its workspace (whose other members' dependencies may be missing),
fields inherited from it filled in, optional dependencies the default features leave off taken
out (cargo resolves every dependency before it checks anything), dev-dependencies only for a
test. Dependencies resolve offline from the system's crate directory source where there is one
(Debian's /usr/share/cargo/registry). Errors name the user's paths, never the scratch folder.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .crate_manifest import DEBIAN_REGISTRY, ManifestError, cargo_config, checkable_manifest

SKIP_DIRS = {"target", ".git"}
SYSTEM_REGISTRY = Path(DEBIAN_REGISTRY)  # Debian's librust-*-dev crates


def copy_tree(src: Path, dest: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)  # never walk build output
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file():
                target = dest / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


@dataclass
class Scratch:
    crate: Path  # the crate's folder in the copy
    member_prefix: str  # cargo's paths start so ("": the copy is a workspace of its own)
    paths: dict[str, str]  # scratch path -> the user's path, for messages


def make_scratch(crate_dir: Path, workdir: Path, kind: str) -> Scratch:
    """Copy the crate under `workdir`, ready for an offline `cargo check` (kind "check") or `cargo test`."""
    crate_dir = crate_dir.resolve()
    crate = workdir / "crate"
    copy_tree(crate_dir, crate)
    try:
        manifest, _ = checkable_manifest(crate_dir, dev=(kind != "check"))
        (crate / "Cargo.toml").write_text(manifest, encoding="utf-8")
        (crate / "Cargo.lock").unlink(missing_ok=True)  # it may pin versions the directory source lacks
    except ManifestError:
        pass  # cargo says what is wrong with it, in its own words
    cargo_home = workdir / "cargo-home"
    cargo_home.mkdir(parents=True, exist_ok=True)
    if SYSTEM_REGISTRY.is_dir():
        (cargo_home / "config.toml").write_text(cargo_config(str(SYSTEM_REGISTRY)), encoding="utf-8")
    return Scratch(crate, "", {str(crate): str(crate_dir), str(workdir): "<scratch>"})


MISSING_PACKAGE = re.compile(r"no matching package named `([^`]+)` found")


def cargo_failure(returncode: int, stderr: str, paths: dict[str, str]) -> str:
    """cargo's first error, whole, in the user's paths, and what to do about it."""
    text = stderr
    for scratch, user in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(scratch, user)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("error")), None)
    if start is None:
        first = "\n".join(lines[-20:]).strip() or "(no output)"
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith(("error", "warning:"))), len(lines))
        first = "\n".join(lines[start:end]).strip()
    message = f"cargo exited {returncode}: {first}"
    missing = MISSING_PACKAGE.search(first)
    if missing:
        name = missing.group(1)
        message += (f"\nwhat to do: the dependency `{name}` is not available offline. Provide it as a "
                    f"directory source (`cargo vendor`, or the system package librust-{name.replace('_', '-')}-dev "
                    f"under {SYSTEM_REGISTRY}), or make it an optional dependency off by default.")
    elif "<scratch>" in message or "failed to parse manifest" in first or "failed to read" in first:
        message += "\nwhat to do: check that the crate's Cargo.toml (and its workspace's) parse with `cargo metadata`."
    return message
