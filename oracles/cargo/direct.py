"""The rustc command cargo runs for a crate, captured once, to check the crate again without cargo.

Each `cargo check` of a scratch copy costs cargo's own start-up (reading the manifests, resolving,
fingerprinting every dependency) and, for a crate whose build script says nothing of what it
depends on, a new run of that build script; the compiler's work is the rest. Cargo runs rustc
through `RUSTC_WRAPPER`: a small script notes the command line, working folder and environment
of every rustc it runs. The crate's own one (its library, metadata only) is then run directly
for later checks: the same arguments, environment and dependencies (their rmeta files from the
copy's target folder), in the same sandbox, so its diagnostics are the ones cargo would relay.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..verdict import json_lines

NOTE_SCRIPT = ('#!/bin/sh\n# cargo runs rustc through this: note how (folder, arguments, environment), then run it\n'
               'note="$SYNTH_RUSTC_NOTES/$$"\nprintf \'%s\\0\' "$PWD" "$@" > "$note.argv"\nenv -0 > "$note.env"\nexec "$@"\n')
DROPPED_ENV = ("RUSTC_WRAPPER", "SYNTH_RUSTC_NOTES", "CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS")  # no jobserver alone


@dataclass
class RustcCommand:
    argv: list[str]
    cwd: str
    env: dict[str, str]


def note_taker(folder: Path) -> dict[str, str]:
    """The environment that makes cargo note its rustc commands under `folder`."""
    notes = folder / "rustc-notes"
    notes.mkdir(exist_ok=True)
    script = folder / "rustc-note.sh"
    if not script.exists():
        script.write_text(NOTE_SCRIPT)
        script.chmod(0o755)
    return {"RUSTC_WRAPPER": str(script), "SYNTH_RUSTC_NOTES": str(notes)}


def crate_command(folder: Path, crate_root: Path, lib_path: str) -> RustcCommand | None:
    """The command that checked the crate's own library in the last cargo run (None: cargo ran
    none, e.g. nothing changed); the notes are cleared."""
    found = None
    notes = folder / "rustc-notes"
    for argv_file in sorted(notes.glob("*.argv"), key=lambda p: p.stat().st_mtime_ns):
        cwd, *argv = argv_file.read_bytes().decode().split("\0")[:-1]
        env_file = argv_file.with_suffix(".env")
        if Path(cwd) == crate_root and lib_path in argv and "--crate-type" in argv and env_file.exists():
            env = dict(item.split("=", 1) for item in env_file.read_bytes().decode().split("\0") if "=" in item)
            found = RustcCommand(argv, cwd, {k: v for k, v in env.items() if k not in DROPPED_ENV})
    for path in notes.iterdir():
        path.unlink()
    return found


def diagnostics_of(stderr: str) -> tuple[list[dict], bool]:
    """rustc's JSON diagnostics (`--error-format=json`), artifact notes left out; and whether the
    output was cut."""
    messages, cut = json_lines(stderr)
    return [m for m in messages if m.get("$message_type", "diagnostic") == "diagnostic"], cut


def bare_seconds(command: RustcCommand) -> float:
    """One run of the command as it is: no sandbox, no Python between (the floor of a check)."""
    start = time.monotonic()
    subprocess.run(command.argv, cwd=command.cwd, env=command.env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - start
