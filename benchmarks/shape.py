"""`synth bench shape`: the import structure of the project's own packages, read from the code.

Every `import` statement counts (also those inside functions: they are dependencies all the
same), except those under `if TYPE_CHECKING:`. Prints the import cycles, the imports of
benchmarks/ or tests/ from runtime code, the longest chain of imports between modules (its length
in modules, and the chain), the modules over the size limit and the folders with too many modules."""
from __future__ import annotations

import functools
from pathlib import Path

from synth.lanes.fingerprint import imported_modules

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("synth", "oracles", "training")
PACKAGES = (*RUNTIME, "benchmarks")
MAX_LINES = 350
ERROR_ROOT = "oracles.errors"
MAX_FOLDER = 8  # modules in one folder (its __init__ aside): more, and it wants sub-folders


def modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the project modules it imports (a name imported from a package resolves to the
    package's module, or to the submodule when the name is one)."""
    mods = modules(root)

    def resolve(name: str) -> str | None:
        if name.split(".")[0] == "tests":
            return name  # never a module of ours to follow, but an import to report
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None
    graph = {}
    for name, path in mods.items():
        deps = {resolve(n) for n in imported_modules(path, name, lambda n: n in mods)}
        graph[name] = deps - {None, name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports (in modules), on the graph without cycles."""
    @functools.cache
    def best(v: str) -> tuple[str, ...]:
        tails = [best(w) for w in sorted(graph[v] & graph.keys())]
        return (v, *max(tails, key=len, default=()))
    return list(max((best(v) for v in sorted(graph)), key=len))


def shape(root: Path = ROOT) -> dict:
    graph = import_graph(root)
    loops = cycles(graph)
    runtime_imports = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.split(".")[0] in RUNTIME
                             for d in deps if d.split(".")[0] in ("benchmarks", "tests"))
    chain = longest_chain(graph) if not loops else []
    # oracles/errors.py holds SynthError, the root every error class derives from: one link under
    # each module that raises; the chain of the modules above it is the structure's own depth
    above = {m: deps - {ERROR_ROOT} for m, deps in graph.items() if m != ERROR_ROOT}
    chain_above = longest_chain(above) if not loops else []
    sizes = {m: len(p.read_text().splitlines()) for m, p in modules(root).items()}
    return {"modules": len(graph), "imports": sum(len(d) for d in graph.values()), "cycles": loops,
            "runtime_imports_of_benchmarks_or_tests": runtime_imports, "longest_chain": len(chain),
            "chain": " -> ".join(chain), "longest_chain_above_error_root": len(chain_above), "max_lines": MAX_LINES,
            "over_max_lines": {m: n for m, n in sorted(sizes.items()) if n > MAX_LINES},
            "max_folder": MAX_FOLDER, "crowded_folders": crowded_folders(root)}


def crowded_folders(root: Path = ROOT) -> dict[str, int]:
    """Folders of the runtime packages holding more than MAX_FOLDER modules."""
    counts: dict[str, int] = {}
    for package in RUNTIME:
        for path in (root / package).rglob("*.py"):
            if path.name != "__init__.py":
                folder = str(path.parent.relative_to(root))
                counts[folder] = counts.get(folder, 0) + 1
    return {folder: n for folder, n in sorted(counts.items()) if n > MAX_FOLDER}


def bench(args) -> dict:
    """`synth bench shape`."""
    return shape()
