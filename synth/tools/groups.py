"""Which tools are alike, for hard negatives: a tool's `_meta.product_lane` when it has one;
else its server, split by the stems its tools' names share. The split is made only where most
of the server's tools fall in stems of two or more (vox_app_* and vox_data_* become two groups);
otherwise the server stays one group, so the git server's git_status, git_diff, git_log, git_show
... are one group rather than ten singletons with nothing to draw negatives from."""
from __future__ import annotations

import re
from collections import defaultdict


def name_segments(name: str) -> list[str]:
    return [s for s in re.split(r"[_\-.]", name.lower()) if s]


def _common_prefix(lists: list[list[str]]) -> list[str]:
    prefix = []
    for parts in zip(*lists):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    shortest = min(len(p) for p in lists)
    return prefix[:max(0, shortest - 1)]  # never a whole name: something must be left to split on


def stem_groups(names: list[str]) -> dict[str, str]:
    """name -> its stem group (a name prefix shared with other tools, "" for the whole server)."""
    if not names:
        return {}
    segments = {n: name_segments(n) or [n] for n in names}
    prefix = _common_prefix(list(segments.values()))
    by_next: dict[str, list[str]] = defaultdict(list)
    for name, parts in segments.items():
        by_next[parts[len(prefix)] if len(parts) > len(prefix) else ""].append(name)
    shared = {stem: members for stem, members in by_next.items() if len(members) >= 2 and stem}
    base = "_".join(prefix)
    if len(shared) < 2 or sum(map(len, shared.values())) * 2 < len(names):
        return {n: base for n in names}
    return {n: "_".join([*prefix, stem]) for stem, members in shared.items() for n in members} | \
        {n: base for n in names if not any(n in m for m in shared.values())}


def group_of(namespace: str, stem: str, meta: dict | None) -> str:
    if meta and meta.get("product_lane"):
        return str(meta["product_lane"])
    return ":".join(filter(None, [namespace or "tools", stem]))
