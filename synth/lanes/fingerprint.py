"""A lane's fingerprint, derived rather than listed: its settings as dumped (less the keys marked
ACROSS_ITEMS, which pick items or combine their rows and never change one), the models it calls,
every prompt template, the oracles' toolchains and flags, the seed, the [tokens] fit, and the
source of every module the lane runs (its own module and each project module it imports, found by
walking their imports). A list written by hand goes stale when the code it names calls something
new; a walk cannot miss an edit that changes a row, so the item store never hands back old rows."""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

from synth.prompting.templates import PROMPTS
from synth.rows.keys import fingerprint

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("synth", "oracles", "training")  # the packages whose modules are followed


def module_path(name: str, root: Path = ROOT) -> Path | None:
    """The file of a project module (a package's `__init__.py`), None when it is not one."""
    if name.split(".")[0] not in PROJECT:
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imported_modules(path: Path, module: str, is_module) -> set[str]:
    """The modules the file's `import` statements name (those inside functions too: they run all
    the same; not those under `if TYPE_CHECKING:`), relative ones made absolute; for `from a
    import b`, `a.b` where `is_module` says it is one, else `a`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        names |= {f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base for alias in node.names}
    return names


def project_modules(start: str, root: Path = ROOT) -> dict[str, Path]:
    """`start` and every project module reachable from it by imports. Not the packages above a
    module unless imported by name: `synth/lanes/__init__.py` is the registry of every lane."""
    found: dict[str, Path] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = module_path(name, root)
        if path is None:
            continue
        found[name] = path
        todo += sorted(imported_modules(path, name, lambda n: module_path(n, root) is not None))
    return dict(sorted(found.items()))


@functools.cache
def source_fingerprint(start: str) -> str:
    """The source of every module `start` runs, as one hash (read once per process)."""
    return fingerprint(*[(name, hashlib.sha256(path.read_bytes()).hexdigest())
                         for name, path in project_modules(start).items()])


def templates_fingerprint() -> str:
    """Every prompt template's bytes: a lane's prompts come from some of them."""
    return fingerprint(*[(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted(PROMPTS.iterdir())
                         if p.is_file()])


def lane_fingerprint(lane, ctx, settings, lang: str | None, oracle) -> str:
    """What every stored item of `lane` depends on, besides the item itself; the lane's own
    `fingerprint` adds what only it knows (e.g. a tool set's servers)."""
    crate = ctx.crate_oracle
    return fingerprint(lane.name, lang, ctx.seed, settings.item_settings(),
                       [ctx.models[ref].fingerprint() for ref in settings.model_refs()],
                       templates_fingerprint(), source_fingerprint(type(lane).__module__),
                       *([getattr(oracle, "toolchain", "none"), getattr(oracle, "flags", None)] if oracle else []),
                       *([crate.toolchain, crate.flags] if crate is not None and lang == "rust" else []),
                       ctx.fit.fingerprint, lane.fingerprint(ctx, settings, lang, oracle))
