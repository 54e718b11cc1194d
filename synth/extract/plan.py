"""How extraction is cut into independent work: a unit is one crate (its files share a name
index), one loose Rust file or one Vox file; units whose paths interleave (a crate inside
another's folder) form one group, so that groups follow each other in output order; a part is
a group, or a range of one crate's files (a shard) when the crate is too slow for one worker."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from synth.extract.corpus import Skip, cfg_test_module_paths, list_sources, test_code_reason

AFTER_LISTING = 1 << 62  # report order of skips after every listed file (then parse failures)


@dataclass(frozen=True)
class Source:
    seq: int  # position in the walk: skips are reported in this order
    path: Path
    rel: str  # relative to the scanned root: declarations are ordered by it
    lang: str
    rel_in_crate: str | None  # Rust files of a crate: the path inside it


@dataclass
class Unit:
    key: str  # crate folder, `file:REL` or `vox:REL`
    index: int  # order of first appearance
    sources: list[Source] = field(default_factory=list)  # walk order: the crate order of its items

    @property
    def is_crate(self) -> bool:
        return not self.key.startswith(("file:", "vox:"))


@dataclass(frozen=True)
class Part:
    group: int  # output order: group, then the first path it emits
    units: tuple[Unit, ...]
    emit: tuple[str, ...] | None = None  # a shard: the paths (sorted) it writes; None: all

    def first(self) -> str:
        return self.emit[0] if self.emit else ""


def plan(paths: list[str | Path], skipped: list[tuple[tuple, Skip]], include_tests: bool = False) -> list[Part]:
    """One part per group, in output order. Skips found while listing go to `skipped` with
    their report order. A crate's test and example code is left out (a skip with its reason), or
    with `include_tests` kept in a unit of its own (`tests:CRATE`), apart from the library."""
    found: list[Skip] = []
    units: dict[str, Unit] = {}
    crate_roots: dict[Path, Path | None] = {}
    listed = []
    for seq, (path, rel, lang) in enumerate(list_sources(paths, found)):
        while found:  # listing skips keep their place among the reading skips workers report
            skipped.append(((seq, 0, len(skipped)), found.pop(0)))
        listed.append((seq, path, rel, lang, _crate_root(path.parent, crate_roots) if lang == "rust" else None))
    skipped += [((AFTER_LISTING, 0, n), s) for n, s in enumerate(found)]
    test_paths = [p for _, path, _, _, root in listed if root is not None for p in _test_modules(path)]
    for seq, path, rel, lang, root in listed:
        if lang != "rust":
            key, rel_in_crate = f"vox:{rel}", None
        elif root is None:
            key, rel_in_crate = f"file:{rel}", None
        else:
            key, rel_in_crate = str(root), str(path.relative_to(root))
            reason = test_code_reason(path, root, test_paths)
            if reason and not include_tests:
                skipped.append(((seq, 0, len(skipped)), Skip(rel, reason)))
                continue
            if reason:
                key = f"tests:{root}"
        unit = units.setdefault(key, Unit(key, len(units)))
        unit.sources.append(Source(seq, path, rel, lang, rel_in_crate))
    return [Part(number, tuple(group)) for number, group in enumerate(_groups(list(units.values())))]


def _test_modules(path: Path) -> list[Path]:
    """The modules a file declares under `#[cfg(test)]` (read only when it mentions cfg(test))."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    return cfg_test_module_paths(path, data.decode("utf-8", "replace")) if b"cfg(test)" in data else []


def _groups(units: list[Unit]) -> list[list[Unit]]:
    """Units sorted by their first path, merged while their path ranges overlap."""
    groups: list[list[Unit]] = []
    last = None
    for unit in sorted(units, key=lambda u: (min(s.rel for s in u.sources), u.index)):
        rels = [s.rel for s in unit.sources]
        if groups and min(rels) <= last:
            groups[-1].append(unit)
            last = max(last, max(rels))
        else:
            groups.append([unit])
            last = max(rels)
    for group in groups:
        group.sort(key=lambda u: u.index)  # ties between equal paths keep the order units appeared
    return groups


def _crate_root(folder: Path, cache: dict[Path, Path | None]) -> Path | None:
    """The nearest folder at or above `folder` with a Cargo.toml."""
    if folder not in cache:
        if (folder / "Cargo.toml").exists():
            cache[folder] = folder
        else:
            cache[folder] = None if folder.parent == folder else _crate_root(folder.parent, cache)
    return cache[folder]


def shards(part: Part, done: list[str], count: int) -> list[Part]:
    """The paths of `part` not yet `done`, in `count` contiguous runs of similar size."""
    left = [rel for rel in _emitted(part) if rel not in set(done)]
    sizes = {s.rel: s.path.stat().st_size for unit in part.units for s in unit.sources}
    total = sum(sizes[rel] for rel in left) or 1
    runs: list[list[str]] = [[]]
    filled = 0
    for rel in left:
        if runs[-1] and filled >= total * len(runs) / count:
            runs.append([])
        runs[-1].append(rel)
        filled += sizes[rel]
    return [Part(part.group, part.units, tuple(run)) for run in runs]


def _emitted(part: Part) -> list[str]:
    if part.emit is not None:
        return list(part.emit)
    return sorted({s.rel for unit in part.units for s in unit.sources})
