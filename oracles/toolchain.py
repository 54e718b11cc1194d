"""Finding a compiler binary and asking it its version, once per binary file."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .isolation.environ import safe_environ
from .errors import ToolchainMissing


def find_binary(binary: str, setting: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise ToolchainMissing(f"compiler `{binary}` not found (set {setting})")
    return os.path.abspath(path)  # a relative path would break in the sandbox's own working directory


def resolve_rustup_proxy(path: str, tool: str) -> str:
    """A rustup proxy re-resolves the toolchain on every call (~ms each); use the real binary."""
    if Path(os.path.realpath(path)).name not in ("rustup", "rustup-init"):
        return path
    env = safe_environ({"HOME": os.path.expanduser("~")})
    env.setdefault("RUSTUP_HOME", os.path.expanduser("~/.rustup"))
    rustc_proxy = path if tool == "rustc" else str(Path(path).with_name("rustc"))
    sysroot = subprocess.run([rustc_proxy, "--print", "sysroot"], capture_output=True, text=True, timeout=60, env=env, check=True).stdout.strip()
    real = Path(sysroot) / "bin" / tool
    return str(real) if real.exists() else path


def binary_identity(path: str) -> str:
    """Changes when the binary file changes (an upgrade in place)."""
    st = os.stat(os.path.realpath(path))
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def probe_version(path: str, args: list[str], cache=None) -> str:
    def run() -> str:
        done = subprocess.run([path, *args], capture_output=True, text=True, timeout=60,
                              env=safe_environ({"HOME": os.path.expanduser("~")}))
        text = (done.stdout or done.stderr).strip().splitlines()
        if done.returncode != 0 or not text:
            raise ToolchainMissing(f"`{path} {' '.join(args)}` failed: {(done.stderr or '').strip()[:200]}")
        return text[0]

    if cache is None:
        return run()
    return cache.memo(f"version:{binary_identity(path)}:{' '.join(args)}", run)


def start_compiler(binary: str, key: str, cache=None, version_args: tuple[str, ...] = ("-V",),
          rustup_tool: str | None = None) -> tuple[str, str]:
    """An oracle's start-up: its compiler's path (`rustup_tool`: a rustup proxy resolved to that
    tool) and the version its verdicts depend on. A missing compiler is ToolchainMissing naming
    `[oracles] key`."""
    path = find_binary(binary, f"[oracles] {key}")
    if rustup_tool:
        path = resolve_rustup_proxy(path, rustup_tool)
    return path, probe_version(path, list(version_args), cache)


def start_cargo(binary: str, cache=None) -> tuple[str, str, str]:
    """cargo's path, the rustc beside it, and both their versions (a crate oracle's toolchain)."""
    cargo, cargo_version = start_compiler(binary, "cargo to its path", cache, rustup_tool="cargo")
    rustc = str(Path(cargo).with_name("rustc"))
    return cargo, rustc, probe_version(rustc, ["-V"], cache) + " / " + cargo_version
