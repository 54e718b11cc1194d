import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STUB_VOX = ROOT / "tests" / "stubs" / "vox"  # a stub mimicking documented `vox` output, not a compiler
EXAMPLE_CRATE = ROOT / "examples" / "rust"


@pytest.fixture(scope="session")
def rust_oracle():
    from oracles.rustc.oracle import RustOracle
    from oracles.settings import OracleSettings
    return RustOracle(OracleSettings(jobs=2))


@pytest.fixture()
def real_rustc() -> str:
    from oracles.toolchain import find_binary, resolve_rustup_proxy
    return resolve_rustup_proxy(find_binary("rustc", "rustc"), "rustc")


def processes_matching(marker: str) -> list[int]:
    """PIDs whose command line contains `marker` (to prove nothing was left running)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found


def have(binary: str) -> bool:
    return shutil.which(binary) is not None
