"""Every oracle is built here, from one settings object, and they all speak one protocol:
`id`, `toolchain`, `flags`, `stats`, `check(candidates)`, `test(candidates)`, and `toolchain_probe`
(the command whose output its verdicts depend on, asked of every node before it gets work). An
oracle is known by one name: its id, its kind here and its folder's name (`rustc`, `vox`, `cargo`;
`cargo-crate` is oracles/cargo/crate.py). A new oracle is a folder of its own and one entry in
`BUILDERS`."""
from __future__ import annotations

from contextlib import contextmanager
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

    toolchain_probe: tuple[str, ...]  # the [oracles] key of its compiler, and the arguments that print its version


def _rustc(settings: OracleSettings, cache):
    from .rustc.oracle import RustOracle
    return RustOracle(settings, cache=cache)


def _vox(settings: OracleSettings, cache):
    from .vox.oracle import VoxOracle
    return VoxOracle(settings, cache=cache)


def _cargo(settings: OracleSettings, cache):
    from .cargo.oracle import CargoOracle
    return CargoOracle(settings, cache=cache)


def _cargo_crate(settings: OracleSettings, cache):
    from .cargo.crate import CargoCrateOracle
    return CargoCrateOracle(settings, cache=cache)


BUILDERS = {"rustc": _rustc, "vox": _vox, "cargo": _cargo, "cargo-crate": _cargo_crate}
LANG_KINDS = {"rust": "rustc", "vox": "vox"}  # the oracle that checks a language's files


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
            oracles[lang] = build_oracle(LANG_KINDS[lang], settings, cache)
        except ToolchainMissing as exc:
            if attention is None:
                raise
            attention.append(missing_note(lang, settings or OracleSettings(), exc))
    return oracles


CRATE_TEST_TIMEOUT_S = 20.0  # a test binary's limit: an answer that loops forever costs that much


def crate_tests_oracle(settings: OracleSettings, verdicts: str = ""):
    """The oracle that runs an answer against its crate's own tests (the judge's `crate_tests`), its
    verdicts kept in the folder `verdicts` (if any: the same answer in the same crate, a baseline's
    judged again after a model, runs once). A test binary gets CRATE_TEST_TIMEOUT_S (the loop's
    crates run their whole suites in a few seconds in debug builds); a crate whose suite needs
    longer as it is gives its tasks no tests. Its tests run on as many threads as the oracle runs
    compilers (`[oracle] jobs`): the judge runs one suite at a time."""
    from .cargo.oracle import CargoOracle, CargoSettings
    return CargoOracle(settings, cache=VerdictCache(verdicts) if verdicts else None,
                       tuning=CargoSettings(test_timeout_s=CRATE_TEST_TIMEOUT_S, test_threads=settings.jobs))


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
        return build_oracle("cargo-crate", settings, cache)
    except ToolchainMissing:
        attention.append("no `cargo`: Rust declarations are only checked in standalone files")
        return None


@contextmanager
def opened_oracles(langs: set[str], with_crate: bool, settings: OracleSettings | None = None):
    """(an oracle per language, the crate oracle when `with_crate` else None), the crate oracle
    closed after (its copies of crates live until then)."""
    crate = build_oracle("cargo-crate", settings) if with_crate else None
    try:
        yield build_oracles(langs, settings), crate
    finally:
        if crate is not None:
            crate.close()
