"""`synth check`: a verdict per file. `.rs` files are standalone candidates (batched), a folder
with `Cargo.toml` is checked in place, `.vox` files go through `vox check`."""
from __future__ import annotations

from pathlib import Path

from oracles.errors import InputError
from oracles.verdict import Splice
from oracles.factory import build_oracle
from oracles.settings import OracleSettings
from oracles.errors import ToolchainMissing
from oracles.verdict import Candidate


class CheckInputError(InputError):
    """A path that cannot be checked (missing, not UTF-8, no language): `synth check` exits 2."""


def _lang_of(path: Path, forced: str | None) -> str:
    if forced:
        return forced
    if path.suffix == ".vox":
        return "vox"
    if path.suffix == ".rs" or (path / "Cargo.toml").exists():
        return "rust"
    raise CheckInputError(f"{path}: cannot tell the language (use --lang rust|vox)")


def check_paths(paths: list[str], lang: str | None, edition: str, vox_binary: str, cache, jobs: int):
    """(path, Verdict) pairs: .rs files as standalone candidates (batched), crate folders in place,
    .vox files through `vox check`."""

    rust_files, crates, vox_files = [], [], []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CheckInputError(f"{raw}: no such file or directory")
        kind = _lang_of(path, lang)
        if kind == "rust" and path.is_dir():
            if not (path / "Cargo.toml").exists():
                raise CheckInputError(f"{raw}: a folder must be a crate (no Cargo.toml)")
            crates.append(path)
        elif kind == "rust":
            rust_files.append(path)
        else:
            vox_files.append(path)
    settings = OracleSettings(edition=edition, vox=vox_binary, jobs=jobs)
    results = []
    try:
        if rust_files:
            oracle = build_oracle("rustc", settings, cache)
            verdicts = oracle.check([Candidate.of(_read(p)) for p in rust_files])
            results += list(zip(map(str, rust_files), verdicts))
        if crates:
            oracle = build_oracle("cargo", settings, cache)
            lib = lambda c: "src/lib.rs" if (c / "src/lib.rs").exists() else "src/main.rs"  # noqa: E731
            verdicts = oracle.check([Splice(str(c), lib(c), 0, 0, "") for c in crates])
            results += list(zip(map(str, crates), verdicts))
        if vox_files:
            oracle = build_oracle("vox", settings, cache)
            verdicts = oracle.check([Candidate.of(_read(p)) for p in vox_files])
            results += list(zip(map(str, vox_files), verdicts))
    except ToolchainMissing as exc:
        raise CheckInputError(str(exc)) from exc
    order = {p: i for i, p in enumerate(paths)}
    return sorted(results, key=lambda pv: order.get(pv[0], 0))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CheckInputError(f"{path}: not UTF-8 text ({exc.reason})") from exc


def verdict_json(path: str, verdict) -> dict:
    """One line of `synth check --json`."""
    return {
        "path": path, "passed": verdict.passed,
        "diagnostics": [{"code": d.code, "severity": d.severity, "message": d.message,
                         "line": d.line, "column": d.column, **({"path": d.path} if d.path else {})}
                        for d in verdict.diagnostics],
        "oracle": verdict.oracle, "toolchain": verdict.toolchain, "timed_out": verdict.timed_out,
        "isolation": verdict.sandbox.get("isolation"),
    }
