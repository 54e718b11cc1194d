"""A checkable manifest for a scratch copy of a real crate.

`cargo check --offline` resolves every dependency a manifest names, optional and dev ones
included, and a workspace member needs its workspace. So the scratch copy gets a manifest of its
own: its own `[workspace]` (detached from the real one; `workspace = true` fields inherited from
it), the library target, the dependencies the default features need (normal, build, per-target),
and every feature still declared (so `#[cfg(feature = ...)]` reads as in the real crate) but
those off by default emptied, so they pull in nothing that may be missing. Dev-dependencies go
unless the copy is to be tested (`dev`), and then its declared test, example and bench targets stay.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from oracles.errors import SynthError

DEBIAN_REGISTRY = "/usr/share/cargo/registry"  # Debian's librust-*-dev crates: a cargo directory source
DEP_TABLES = ("dependencies", "build-dependencies")
TARGET_ARRAYS = ("bin", "test", "example", "bench")  # kept for a copy that is tested
PACKAGE_KEYS = ("name", "version", "edition", "build", "links", "autobins", "autoexamples", "autotests",
                "autobenches", "rust-version")
DEP_KEYS = ("version", "path", "features", "default-features", "default_features", "package", "optional")


def cargo_config(registry: str = DEBIAN_REGISTRY) -> str:
    return (f'[source.crates-io]\nreplace-with = "local-registry"\n\n'
            f'[source.local-registry]\ndirectory = {json.dumps(registry)}\n\n[net]\noffline = true\n')


class ManifestError(SynthError, Exception):
    """The crate's manifest cannot be turned into a checkable one (the message says why)."""


def _workspace_root(crate_dir: Path) -> dict:
    for parent in crate_dir.resolve().parents:
        manifest = parent / "Cargo.toml"
        if manifest.exists():
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
            if "workspace" in data:
                return data["workspace"] | {"__dir": str(parent)}
    return {}


def _inherit(value, key: str, inherited: dict, what: str):
    if isinstance(value, dict) and value.get("workspace") is True:
        if key not in inherited:
            raise ManifestError(f"{what} `{key}` is inherited from a workspace that does not define it")
        return inherited[key]
    return value


def _dependency(name: str, spec, workspace: dict, crate_dir: Path) -> dict:
    if isinstance(spec, str):
        return {"version": spec}
    spec = dict(spec)
    if spec.pop("workspace", False) is True:
        base = (workspace.get("dependencies") or {}).get(name)
        if base is None:
            raise ManifestError(f"dependency `{name}` is inherited from a workspace that does not define it")
        base = {"version": base} if isinstance(base, str) else dict(base)
        if "path" in base:  # relative to the workspace root
            base["path"] = str((Path(workspace["__dir"]) / base["path"]).resolve())
        extra = spec.pop("features", [])
        spec = base | spec
        spec["features"] = sorted(set(base.get("features", [])) | set(extra))
    elif "path" in spec:
        spec["path"] = str((crate_dir / spec["path"]).resolve())
    return {k: v for k, v in spec.items() if k in DEP_KEYS}


def _default_closure(features: dict, optional: set[str], extra: tuple[str, ...] = ()) -> tuple[set[str], set[str]]:
    """The features and optional dependencies turned on by `default` (and by the `extra` features)."""
    on_features, on_deps = set(), set()
    todo = (["default"] if "default" in features else []) + list(extra)
    while todo:
        item = todo.pop()
        if item.startswith("dep:"):
            on_deps.add(item[4:])
            continue
        if "/" in item:
            dep = item.split("/", 1)[0]
            if not dep.endswith("?"):
                on_deps.add(dep)
                if dep in features:
                    todo.append(dep)
            continue
        if item in features and item not in on_features:
            on_features.add(item)
            todo.extend(features[item])
        elif item in optional:
            on_deps.add(item)
    return on_features, on_deps


def _kept_entry(item: str, on_features: set[str], on_deps: set[str]) -> bool:
    if item.startswith("dep:"):
        return item[4:] in on_deps
    if "/" in item:
        return item.split("/", 1)[0].rstrip("?") in on_deps
    return item in on_features or item in on_deps


def _read(crate_dir: Path) -> dict:
    path = crate_dir / "Cargo.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path.name}: {exc}") from exc


def _dependency_sources(data: dict, dev: bool) -> list[tuple[str, dict]]:
    """(table name, its dependencies) for every dependency table a check resolves."""
    dep_tables = DEP_TABLES + (("dev-dependencies",) if dev else ())
    sources = [(t, data.get(t) or {}) for t in dep_tables]
    for target, body in sorted((data.get("target") or {}).items()):
        sources += [(f"target.{json.dumps(target)}.{t}", body.get(t) or {}) for t in dep_tables]
    return sources


def offline_features(crate_dir: Path, registry: str = DEBIAN_REGISTRY) -> list[str]:
    """The features off by default whose optional dependencies are all at hand offline (in the
    directory source `registry`, or at their path): those a check can turn on."""
    data = _read(crate_dir)
    specs = {name: spec for _, deps in _dependency_sources(data, False) for name, spec in deps.items()
             if isinstance(spec, dict) and spec.get("optional")}
    features = data.get("features") or {}
    on_default, _ = _default_closure(features, set(specs))
    names = [re.match(r"(.*?)-\d", p.name) for p in Path(registry).iterdir()] if Path(registry).is_dir() else []
    folders = {m.group(1) for m in names if m}

    def at_hand(dep: str) -> bool:
        spec = specs[dep]
        if "path" in spec:
            return (crate_dir / spec["path"]).is_dir()
        return spec.get("package", dep) in folders

    out = []
    for name in sorted(set(features) | (set(specs) - set(features))):
        if name == "default" or name in on_default:
            continue
        _, deps = _default_closure({**features, "default": []}, set(specs), (name,))
        if all(at_hand(d) for d in deps if d in specs):
            out.append(name)
    return out


def checkable_manifest(crate_dir: Path, dev: bool = False, features: tuple[str, ...] = ()) -> tuple[str, dict]:
    """(manifest text, facts: name, version, edition, features on) for a scratch copy of the crate
    (`dev`: one that `cargo test` builds, with its dev-dependencies), with the `features` on
    besides the default ones."""
    data = _read(crate_dir)
    package = data.get("package")
    if not package:
        raise ManifestError("Cargo.toml has no [package] (a virtual workspace manifest is not a crate)")
    workspace = {} if "workspace" in data else _workspace_root(crate_dir)
    inherited = workspace.get("package") or {}
    pkg = {k: _inherit(package[k], k, inherited, "package field") for k in PACKAGE_KEYS if k in package}
    pkg.setdefault("version", "0.0.0")
    pkg.setdefault("edition", "2015")
    tables: dict[str, dict] = {}  # "dependencies", "target.'cfg(..)'.dependencies", ...
    sources = _dependency_sources(data, dev)
    optional = {name for _, deps in sources for name, spec in deps.items()
                if isinstance(spec, dict) and spec.get("optional")}
    features_on = features
    features = data.get("features") or {}
    unknown = [f for f in features_on if f not in features and f not in optional]
    if unknown:
        raise ManifestError(f"no feature named {', '.join(unknown)}")
    on_features, on_deps = _default_closure(features, optional, features_on)
    for table, deps in sources:
        kept = {name: _dependency(name, spec, workspace, crate_dir) for name, spec in sorted(deps.items())
                if name not in optional or name in on_deps}
        if kept:
            tables[table] = kept
    out_features = {name: ([e for e in entries if _kept_entry(e, on_features, on_deps)] if name in on_features else [])
                    for name, entries in features.items()}
    for dep in sorted(optional - on_deps - set(features)):
        out_features[dep] = []  # its implicit feature stays declared, pulling in nothing
    if features_on:  # on as default features are: every check of the copy has them
        out_features["default"] = sorted(set(out_features.get("default", [])) | set(features_on))
    lines = [f"{k} = {_value(data[k])}" for k in TARGET_ARRAYS if dev and isinstance(data.get(k), list)]
    lines += ["[package]", *(f"{k} = {_value(v)}" for k, v in pkg.items()), "", "[workspace]", ""]
    lib = data.get("lib") or {}
    lib_keys = {k: v for k, v in lib.items() if k in ("name", "path", "proc-macro", "proc_macro", "crate-type")}
    if lib_keys:
        lines += ["[lib]", *(f"{k} = {_value(v)}" for k, v in lib_keys.items()), ""]
    if out_features:
        lines += ["[features]", *(f"{_key(k)} = {_value(v)}" for k, v in sorted(out_features.items())), ""]
    for table, deps in tables.items():
        lines += [f"[{table}]", *(f"{_key(k)} = {_value(v)}" for k, v in deps.items()), ""]
    facts = {"name": pkg["name"], "version": pkg["version"], "edition": pkg["edition"],
             "features": sorted(on_features | (on_deps & set(features_on))), "lib_path": lib.get("path", "src/lib.rs"),
             "build_path": _build_script(crate_dir, pkg.get("build"))}
    return "\n".join(lines), facts


def _build_script(crate_dir: Path, build) -> str | None:
    """The build script's path in the crate (cargo's default: build.rs beside the manifest)."""
    if isinstance(build, str):
        return build
    return "build.rs" if build is not False and (crate_dir / "build.rs").is_file() else None


def _key(name: str) -> str:
    return name if name.replace("-", "").replace("_", "").isalnum() else json.dumps(name)


def _value(value) -> str:
    """TOML for the values a manifest uses here: strings, booleans, lists, inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    return str(value)
