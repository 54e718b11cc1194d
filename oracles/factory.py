"""Every oracle is built here, from one settings object, and they all speak one protocol:
`id`, `toolchain`, `flags`, `stats`, `check(candidates)`, `test(candidates)`. A new oracle is a
module of its own and one entry in `BUILDERS`."""
from __future__ import annotations

from typing import Protocol

from .cache import VerdictCache
from .settings import OracleSettings
from .verdict import Candidate, Verdict


class Oracle(Protocol):
    id: str
    toolchain: str

    @property
    def flags(self) -> dict: ...

    def check(self, candidates: list[Candidate]) -> list[Verdict]: ...

    def test(self, candidates: list[Candidate]) -> list[Verdict]: ...


def _rust(settings: OracleSettings, cache):
    from .rust import RustConfig, RustOracle
    return RustOracle(RustConfig(rustc=settings.rustc, edition=settings.edition, jobs=settings.jobs), cache=cache)


def _vox(settings: OracleSettings, cache):
    from .vox import VoxConfig, VoxOracle
    return VoxOracle(VoxConfig(binary=settings.vox, jobs=settings.jobs), cache=cache)


def _crate(settings: OracleSettings, cache):
    from .crate import CrateOracle
    return CrateOracle(cache=cache)


def _crate_batch(settings: OracleSettings, cache):
    from .crate_batch import CrateBatchOracle
    return CrateBatchOracle(cache=cache, workers=settings.jobs)


# A language, or "crate" (a crate checked in place) and "crate_batch" (many mutants checked in
# one copy of their real crate).
BUILDERS = {"rust": _rust, "vox": _vox, "crate": _crate, "crate_batch": _crate_batch}


def build_oracle(kind: str, settings: OracleSettings | None = None, cache: VerdictCache | None = None) -> Oracle:
    """The oracle for `kind`; a missing compiler raises ToolchainMissing, naming the setting."""
    if kind not in BUILDERS:
        raise ValueError(f"no oracle for {kind!r} (known: {', '.join(BUILDERS)})")
    return BUILDERS[kind](settings or OracleSettings(), cache)


def build_oracles(langs: set[str], settings: OracleSettings | None = None, cache: VerdictCache | None = None,
                  attention: list[str] | None = None) -> dict:
    """An oracle per language; with `attention`, a language whose compiler is missing is left out
    and said there (the run goes on with the others), else the error propagates."""
    from .errors import ToolchainMissing
    oracles = {}
    for lang in sorted(langs):
        try:
            oracles[lang] = build_oracle(lang, settings, cache)
        except ToolchainMissing as exc:
            if attention is None:
                raise
            attention.append(missing_note(lang, settings or OracleSettings(), exc))
    return oracles


def missing_note(lang: str, settings: OracleSettings, exc: Exception) -> str:
    if lang == "vox":
        return (f"Vox sources were not processed: no `vox` binary at {settings.vox!r} "
                "(set [oracles] vox in the config to your vox)")
    return f"{lang} sources were not processed: {exc}"


def crate_oracle(oracles: dict, settings: OracleSettings, cache: VerdictCache | None, attention: list[str]):
    """The in-crate oracle for Rust declarations whose standalone file fails (None without Rust
    sources, or without cargo: then `attention` says so)."""
    from .errors import ToolchainMissing
    if "rust" not in oracles:
        return None
    try:
        return build_oracle("crate_batch", settings, cache)
    except ToolchainMissing:
        attention.append("no `cargo`: Rust declarations are only checked in standalone files")
        return None
