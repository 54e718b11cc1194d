"""One scratch copy of a real crate, checked again and again with different splices.

The copy gets a checkable manifest (crate_manifest.py) and its own target folder, so the
dependencies are built once and each check recompiles only the crate. Cargo runs offline against
the Debian directory source. Lints are capped at warnings (as cargo does for dependencies): a
crate's `#![deny(...)]` meeting a newer compiler's lints would otherwise fail every check.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .direct import RustcCommand, bare_seconds, crate_command, diagnostics_of, note_taker
from .manifest import DEBIAN_REGISTRY, ManifestError, cargo_config, checkable_manifest
from ..rustc.diagnostics import Region
from ..verdict import Splice, crate_files, crate_hash, json_lines
from ..isolation import run_folders
from ..isolation.sandbox import WORKDIR_KIND, Limits, Sandbox

RUSTFLAGS = "--cap-lints=warn --verbose"  # --verbose: full type names, never written to a file
SENTINEL = ("\n#[allow(dead_code)]\nmod __synth_sentinel {\n    #[warn(unused_mut)]\n"
            "    fn __synth_sentinel_probe() { let mut sentinel_probe = 0u8; let _ = sentinel_probe; }\n}\n")


@dataclass
class SpliceSite:
    """Where one splice landed in the scratch copy: its file, lines, and the line shift after it."""

    path: str
    region: Region
    shift: int  # lines added by the splice (negative: removed); lines after it move by this


@dataclass
class CargoRun:
    messages: list[dict]  # rustc's diagnostics for the crate itself
    sites: list[SpliceSite]
    returncode: int | None
    timed_out: bool
    stderr: str
    elapsed_s: float
    isolation: dict = field(default_factory=dict)
    direct: bool = False  # rustc run directly (its exit status and stderr are rustc's, not cargo's)
    cut: bool = False  # its output ran past the sandbox's cap: some diagnostics are missing


class ScratchCrate:
    """A private copy of `crate_dir`; `check(splices)` applies them (and undoes the last ones)."""

    def __init__(self, crate_dir: Path, cargo: str, rustc: str, sandbox: Sandbox, timeout_s: float,
                 registry: str = DEBIAN_REGISTRY, features: tuple[str, ...] = (), direct: bool = True):
        self.source = Path(crate_dir)
        self.direct = direct  # after cargo's first run, run its rustc command for the crate directly
        self.command: RustcCommand | None = None
        self.log: list[tuple[list[Splice], bool]] | None = None  # the checks made, when kept (the floor)
        self.cargo, self.rustc, self.sandbox, self.timeout_s = cargo, rustc, sandbox, timeout_s
        # ManifestError: the caller's to report
        manifest, self.facts = checkable_manifest(self.source, features=features)
        self.hash = crate_hash(self.source)
        self.dir = run_folders.make(WORKDIR_KIND)  # the sandbox lets a run write its own scratch folder
        self.root = self.dir / "crate"
        for path in crate_files(self.source):
            dest = self.root / path.relative_to(self.source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        (self.root / "Cargo.toml").write_text(manifest)
        (self.root / "Cargo.lock").unlink(missing_ok=True)
        (self.dir / "home").mkdir()
        (self.dir / "home" / "config.toml").write_text(cargo_config(registry))
        self.lib_path = self.facts["lib_path"]
        self.originals: dict[str, bytes] = {}  # files changed by the last check, as they were
        self.runs = 0
        self.direct_runs = 0  # of them, with rustc directly

    def close(self) -> None:
        run_folders.remove(self.dir)

    def _restore(self) -> None:
        for rel, data in self.originals.items():
            (self.root / rel).write_bytes(data)
        self.originals = {}

    def _apply(self, splices: list[Splice], sentinel: bool) -> list[SpliceSite]:
        by_file: dict[str, list[tuple[int, Splice]]] = {}
        for k, s in enumerate(splices):
            by_file.setdefault(s.path, []).append((k, s))
        if sentinel:
            by_file.setdefault(self.lib_path, [])
        sites: list[SpliceSite | None] = [None] * len(splices)
        stamp = time.time() + 1  # newer than any output, so cargo never replays an old answer
        for rel, items in by_file.items():
            target = self.root / rel
            data = target.read_bytes()
            self.originals[rel] = data
            out, pos, line = [], 0, 1
            for k, s in sorted(items, key=lambda it: it[1].start_byte):
                if s.start_byte < pos:
                    raise ValueError(f"splices overlap in {rel}")
                before = data[pos:s.start_byte]
                line += before.count(b"\n")
                text = s.text.encode()
                last = line + text.count(b"\n") - (1 if text.endswith(b"\n") else 0)
                shift = text.count(b"\n") - data[s.start_byte:s.end_byte].count(b"\n")
                sites[k] = SpliceSite(rel, Region(line, max(line, last)), shift)
                out += [before, text]
                line += text.count(b"\n")
                pos = s.end_byte
            out.append(data[pos:])
            if sentinel and rel == self.lib_path:
                out.append(SENTINEL.encode())
            target.write_bytes(b"".join(out))
            os.utime(target, (stamp, stamp))
        return sites

    def check(self, splices: list[Splice], sentinel: bool = False, cargo: bool = False) -> CargoRun:
        """Check the copy with `splices` applied (then undone): with rustc directly where it can
        (after cargo's first run), else (or with `cargo`) with cargo. Each check starts from the
        compiler's incremental state after the copy's first check, the crate as it is: rustc's
        words can depend on that state (a query cycle reported as E0391 after some checks, E0121
        after others), and a verdict must not depend on which checks a copy made before."""
        if self.runs == 0 and (splices or not sentinel):
            self.check([], sentinel=True)  # the first check is the crate as it is, whoever asks first
        self._restore()
        self._from_start()
        sites = self._apply(splices, sentinel)
        if self.log is not None:
            self.log.append((list(splices), sentinel))
        self.runs += 1
        # a splice in the build script needs cargo to build and run it again
        direct = not cargo and self.command is not None and not any(s.path == self.facts.get("build_path") for s in splices)
        if direct:
            self.direct_runs += 1
            run = self.sandbox.run(self.command.argv, Path(self.command.cwd), limits=Limits(timeout_s=self.timeout_s),
                                   env=self.command.env)
            messages, cut = diagnostics_of(run.stderr)
            cut = cut or run.cut
        else:
            run, messages, cut = self._cargo_check()
        self._restore()
        if self.runs == 1 and self.incremental.is_dir():
            shutil.copytree(self.incremental, self.dir / "incremental-start", copy_function=os.link, dirs_exist_ok=True)
        return CargoRun(messages, sites, run.returncode, run.timed_out, run.stderr, run.elapsed_s, run.isolation, direct,
                        cut)

    @property
    def incremental(self) -> Path:
        return self.dir / "target" / "debug" / "incremental"

    def _from_start(self) -> None:
        """The incremental state the first check left (its files are never written again: rustc
        makes a new session folder each time, from links to the last one's)."""
        start = self.dir / "incremental-start"
        if start.is_dir():
            shutil.rmtree(self.incremental, ignore_errors=True)
            shutil.copytree(start, self.incremental, copy_function=os.link)

    def _cargo_check(self):
        env = {"CARGO_HOME": str(self.dir / "home"), "RUSTC": self.rustc, "CARGO_TARGET_DIR": str(self.dir / "target"),
               "CARGO_TERM_COLOR": "never", "RUSTFLAGS": RUSTFLAGS, "CARGO_INCREMENTAL": "1",
               **(note_taker(self.dir) if self.direct else {})}
        argv = [self.cargo, "check", "--offline", "--lib", "--message-format=json"]
        run = self.sandbox.run(argv, self.root, limits=Limits(timeout_s=self.timeout_s), env=env)
        manifest = str(self.root / "Cargo.toml")
        relayed, cut = json_lines(run.stdout)
        cut = cut or run.cut
        messages = [msg["message"] for msg in relayed
                    if msg.get("reason") == "compiler-message" and msg.get("manifest_path") == manifest]
        if self.direct and self.command is None and not run.timed_out:
            self.command = crate_command(self.dir, self.root, self.lib_path)
        return run, messages, cut

    def floor_s(self) -> float:
        """Bare rustc (no sandbox, no Python between) on the very checks kept in `log`: each one's
        splices applied to this copy again, the crate's rustc command run once."""
        if self.command is None or not self.log:
            return 0.0
        total = 0.0
        for splices, sentinel in self.log:
            self._restore()
            self._from_start()
            self._apply(splices, sentinel)
            total += bare_seconds(self.command)
        self._restore()
        return total


def open_scratch(crate_dir: Path, cargo: str, rustc: str, sandbox: Sandbox, timeout_s: float,
                 features: tuple[str, ...] = (), direct: bool = True) -> ScratchCrate | str:
    """A scratch copy (with `features` on besides the default ones), or why the crate cannot have
    one (a sentence naming the problem)."""
    try:
        return ScratchCrate(crate_dir, cargo, rustc, sandbox, timeout_s, features=features, direct=direct)
    except ManifestError as exc:
        return f"{crate_dir.name}: {exc}"
