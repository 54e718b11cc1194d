"""Which functions of a crate the compiler sees under a feature set.

A crate that passes `cargo check` says nothing of the code its configuration removes: items
behind a `#[cfg(...)]` that is off (a feature off by default, another target, `test`) are dropped
before anything is checked, and a mutant of them "still compiles". One probe check tells them
apart: `compile_error!("synth-probe-<n>")` is planted at the start of each body; rustc reports
every one that survives configuration and stops after macro expansion, before type checking.
"""
from __future__ import annotations

import hashlib
import json
import re

PROBE = 'compile_error!("synth-probe-{}");'
PROBE_MESSAGE = re.compile(r"^synth-probe-(\d+)$")


def body_start(text: str, signature: str, body: str = "") -> int | None:
    """Byte offset in a declaration's `text` just after the opening brace of its body: a
    function's block (`body`, which ends `text`), else the item list after an impl's `signature`
    (its last occurrence: docs before it may quote it, an impl's items never do). None: no body."""
    if body:
        at = len(text) - len(body) if body.startswith("{") and text.endswith(body) else -1
    else:
        found = text.rfind(signature) if signature else -1
        rest = text[found + len(signature):] if found >= 0 else ""
        at = found + len(signature) + len(rest) - len(rest.lstrip()) if rest.lstrip().startswith("{") else -1
    return len(text[:at].encode()) + 1 if at >= 0 else None


def probes_seen(messages: list[dict]) -> set[int]:
    """The probes rustc reported (by their number) among a check's messages."""
    seen = set()
    for raw in messages:
        m = PROBE_MESSAGE.match(raw.get("message", ""))
        if m and raw.get("level") == "error":
            seen.add(int(m.group(1)))
    return seen


def compiled_points(oracle, crate_dir: str, features: tuple[str, ...], points: list[tuple[str, int]], splice) -> set[int]:
    """Which of `points` (file, byte offset of a body's start) a crate oracle's compiler sees in
    the crate with these features: one probe check (two with a build script), kept in its cache;
    `splice(point, text)` inserts text there."""
    scratch = oracle.scratch(crate_dir, features)
    if isinstance(scratch, str) or not points:
        return set()

    def probe() -> list[int] | None:  # None (a timeout) is not kept
        seen: set[int] = set()
        build = scratch.facts.get("build_path")  # its errors would stop cargo before the library
        for part in ([n for n, p in enumerate(points) if p[0] == build], [n for n, p in enumerate(points) if p[0] != build]):
            if part:
                oracle.stats.probe_runs += 1
                probes = [splice(points[n], PROBE.format(k)) for k, n in enumerate(part)]
                run = oracle._run(scratch, probes, False)
                if run.timed_out:
                    return None
                seen |= {part[k] for k in probes_seen(run.messages)}
        return sorted(seen)
    key = json.dumps([oracle.id, oracle.toolchain, oracle.flags, scratch.hash, features, points])
    return set((oracle.cache.memo(f"probe:{hashlib.sha256(key.encode()).hexdigest()}", probe) if oracle.cache
                else probe()) or [])
