"""Each run ends in a numbered snapshot of its rows (assembled: dedup, grouped split, manifest),
copied to the run directory's top level, and a diff against the previous snapshot by lane."""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import orjson

from synth.rows.jsonl import write_json
from synth.rows.rowfile import LEGACY_SUFFIX, existing_rows, iter_rows, row_files, rows_name, rows_path
from synth.tools.servers import snapshot_tool_lists


def snapshot_run(out: Path, assemble_settings, seed: int) -> tuple[Path, dict]:
    """Assemble rows/ into a new numbered snapshot, copy it to the run directory's top level,
    and diff it against the previous snapshot."""
    from synth.assemble.mix import Dedup, Mix, Source
    from synth.assemble.snapshot import assemble
    from synth.assemble.snapshot import write_snapshot

    snapshots = out / "snapshots"
    previous = sorted(p for p in snapshots.glob("[0-9]*") if existing_rows(p, "train").exists()) \
        if snapshots.is_dir() else []
    number = int(previous[-1].name) + 1 if previous else 1
    target = snapshots / f"{number:04d}"
    files = row_files(out / "rows")
    mix = Mix(sources=[Source(name=rows_name(f), path=str(f)) for f in files] or [Source(name="none", path=str(out / "rows"),
                                                                                   optional=True)],
              val_share={"default": assemble_settings.val_share}, seq_len=assemble_settings.seq_len,
              seed=seed, dedup=Dedup(near_duplicates=assemble_settings.near_duplicates),
              licenses=assemble_settings.licenses)
    snap = assemble(mix)
    tool_lists = snapshot_tool_lists(out, target)  # the exact definitions the tool rows were checked against
    if tool_lists:
        snap.manifest["tool_lists"] = tool_lists
    write_snapshot(snap, target)
    diff = diff_snapshots(previous[-1] if previous else None, target)
    write_json(target / "diff.json", diff)
    for name in (rows_path("", "train").name, rows_path("", "val").name, "manifest.json"):
        (out / name).write_bytes((target / name).read_bytes())
    for split in ("train", "val"):  # the packed copies an older synth left at the top
        (out / f"{split}{LEGACY_SUFFIX}").unlink(missing_ok=True)
    return target, diff


def _identity(row: dict) -> tuple:
    """What a row is about: its declaration's place (not content), lane (provenance.stage) and operator; for tool
    rows, the request."""
    prov = row.get("provenance", {})
    where = row.get("decl_key") or f"{prov.get('source_path')}#{prov.get('decl_hash')}"
    return (row.get("lane"), row.get("task"), where, prov.get("stage"), prov.get("operator") or "",
            row.get("prompt") if row.get("task", "").startswith("tool") else "")


def diff_snapshots(old: Path | None, new: Path) -> dict:
    """Rows added, removed and changed (same declaration, lane and operator; other content), by lane."""
    def load(path):
        if path is None:
            return {}
        grouped: dict[tuple, set] = {}
        for split in ("train", "val"):  # a row at a time, each kept as a digest of its whole content
            for row in iter_rows(existing_rows(path, split)):  # (a re-verified row, new toolchain, is a changed row)
                content = hashlib.sha256(orjson.dumps(row, option=orjson.OPT_SORT_KEYS)).digest()
                grouped.setdefault(_identity(row), set()).add(content)
        return grouped
    before, after = load(old), load(new)
    counts = {"added": Counter(), "removed": Counter(), "changed": Counter()}
    for key in set(before) | set(after):
        lane = key[0]
        if key not in before:
            counts["added"][lane] += len(after[key])
        elif key not in after:
            counts["removed"][lane] += len(before[key])
        else:
            fresh, gone = len(after[key] - before[key]), len(before[key] - after[key])
            changed = min(fresh, gone)  # a row about the same thing with other content
            counts["changed"][lane] += changed
            counts["added"][lane] += fresh - changed
            counts["removed"][lane] += gone - changed
    return {"previous": old.name if old else None, "snapshot": new.name,
            **{k: dict(sorted(v.items())) for k, v in counts.items()},
            "total": {k: sum(v.values()) for k, v in counts.items()}}
