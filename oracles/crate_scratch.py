"""The scratch copy a crate is checked in, and what a failed cargo run tells its user.

A workspace member is copied with its workspace (its manifest inherits from the root's). Cargo
resolves every dependency, optional ones included, before it checks anything, so optional
dependencies that the default features leave off are taken out of the scratch manifest (and
dev-dependencies too, for a plain check): they cannot block an offline check. Dependencies
resolve offline from the system's crate directory source where there is one (Debian's
/usr/share/cargo/registry). Errors name the user's paths, never the scratch folder.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {"target", ".git"}
SYSTEM_REGISTRY = Path("/usr/share/cargo/registry")  # Debian's librust-*-dev crates
DEP_TABLES = ("dependencies", "build-dependencies", "dev-dependencies")
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def workspace_root(crate_dir: Path) -> Path:
    """The folder whose Cargo.toml has `[workspace]` above `crate_dir`, else `crate_dir` itself."""
    crate_dir = crate_dir.resolve()
    if _has_workspace(crate_dir / "Cargo.toml"):
        return crate_dir
    for parent in crate_dir.parents:
        if _has_workspace(parent / "Cargo.toml"):
            return parent
    return crate_dir


def _has_workspace(manifest: Path) -> bool:
    try:
        return "workspace" in tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


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
    member_prefix: str  # the crate's folder relative to its workspace root ("" if none): cargo's paths start so
    paths: dict[str, str]  # scratch path -> the user's path, for messages


def make_scratch(crate_dir: Path, workdir: Path, kind: str) -> Scratch:
    """Copy the crate (with its workspace) under `workdir`, ready for an offline `cargo check`
    (kind "check") or `cargo test`."""
    crate_dir = crate_dir.resolve()
    root = workspace_root(crate_dir)
    copy_root = workdir / "ws"
    copy_tree(root, copy_root)
    crate = copy_root / crate_dir.relative_to(root)
    manifest = crate / "Cargo.toml"
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = None  # cargo says what is wrong with it, in its own words
    if data is not None and offline_manifest(data, dev=(kind != "check")):
        manifest.write_text(toml_dumps(data), encoding="utf-8")
    cargo_home = workdir / "cargo-home"
    cargo_home.mkdir(parents=True, exist_ok=True)
    if SYSTEM_REGISTRY.is_dir():
        (cargo_home / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "system"\n\n'
            f'[source.system]\ndirectory = {json.dumps(str(SYSTEM_REGISTRY))}\n', encoding="utf-8")
    prefix = crate_dir.relative_to(root).as_posix()
    return Scratch(crate, "" if prefix == "." else prefix + "/",
                   {str(crate): str(crate_dir), str(copy_root): str(root), str(workdir): "<scratch>"})


def offline_manifest(data: dict, dev: bool) -> bool:
    """Take out optional dependencies the default features leave off (and, unless `dev`, the
    dev-dependencies), with the feature entries that name them. True if anything changed."""
    tables = [data] + [t for t in (data.get("target") or {}).values() if isinstance(t, dict)]
    optional = {name for t in tables for key in DEP_TABLES for name, spec in (t.get(key) or {}).items()
                if isinstance(spec, dict) and spec.get("optional")}
    features = data.get("features") or {}
    dropped = optional - _default_enabled(features, optional)
    changed = False
    for t in tables:
        for key in DEP_TABLES:
            deps = t.get(key)
            if not isinstance(deps, dict):
                continue
            if key == "dev-dependencies" and not dev:
                del t[key]
                changed = True
                continue
            for name in [n for n in deps if n in dropped]:
                del deps[name]
                changed = True
    if dropped:
        def keep(entry: str) -> bool:
            target = entry.removeprefix("dep:").split("/", 1)[0].removesuffix("?")
            return target not in dropped or (target in features and not entry.startswith("dep:") and "/" not in entry)
        data["features"] = {name: [e for e in entries if keep(e)] for name, entries in features.items()}
        explicit = {e[4:] for entries in features.values() for e in entries if e.startswith("dep:")}
        for name in sorted(dropped - explicit):  # its implicit feature stays a name `cfg(feature)` knows
            data["features"].setdefault(name, [])
    return changed


def _default_enabled(features: dict, optional: set[str]) -> set[str]:
    """Optional dependencies that `default` turns on, following features transitively."""
    on, todo, seen = set(), list(features.get("default", [])), set()
    while todo:
        entry = todo.pop()
        if entry in seen:
            continue
        seen.add(entry)
        if entry.startswith("dep:"):
            on.add(entry[4:])
        elif "/" in entry:
            dep = entry.split("/", 1)[0]
            if not dep.endswith("?"):
                on.add(dep)
                todo.append(dep)
        elif entry in features:
            todo.extend(features[entry])
        elif entry in optional:
            on.add(entry)
    return on & optional


def toml_dumps(data: dict) -> str:
    """A manifest as TOML (what tomllib reads back the same): tables, arrays of tables, scalars."""
    lines: list[str] = []
    _table(data, (), lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(data: dict, path: tuple[str, ...], lines: list[str]) -> None:
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not _table_array(v)}
    if path and (scalars or not data):
        lines += ["", f"[{'.'.join(map(_key, path))}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in scalars.items()]
    for k, v in data.items():
        if isinstance(v, dict):
            _table(v, (*path, k), lines)
        elif _table_array(v):
            for item in v:
                lines += ["", f"[[{'.'.join(map(_key, (*path, k)))}]]"]
                lines += [f"{_key(ik)} = {_value(iv)}" for ik, iv in item.items()]


def _table_array(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _key(k: str) -> str:
    return k if BARE_KEY.match(k) else json.dumps(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))  # dates: not in manifests


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
