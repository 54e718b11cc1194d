"""`synth assemble`: rows from many runs -> one dataset snapshot that tells the truth.

Order: load (lanes, gate on the stored verdict) -> sample (seeded per source and row, so adding a
source never reshuffles another) -> decontaminate against held-out bench files -> dedup by
normalized answer (best-rated kept; repair rows by answer and broken input; optionally
near-duplicates by MinHash) -> split grouped by answer hash -> readiness per lane -> write train/val, rejected rows with reasons, manifest, and
exports (TRL conversational JSONL, parquet). Mix weights are real: each row carries its source's
`mix_weight`, which the trainer applies as a per-row loss weight (not physical repeats).
"""
from __future__ import annotations

import hashlib
import platform
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from oracles.errors import SynthError
from synth.rows.jsonl import write_json, write_jsonl
from synth.rows.held import HeldRow
from synth.rows.rowfile import iter_rows, row_files, rows_path, write_rows
from synth.rows.rejection import Rejection
from synth.llm.providers.base import bpe_count
from synth.rows.row import CODE_TASKS, Row

from .answers import answer_hash, tokens
from synth.extract.package import UNKNOWN, permitted

from .card import dataset_card, write_parquet
from .decontaminate import BenchIndex
from .mix import Mix, Source, unit


class AssemblyError(SynthError, RuntimeError):
    """The build must stop (strict readiness, a missing required source): the message says why."""
    label = "assembly failed"


@dataclass
class Snapshot:
    train: list[Row] = field(default_factory=list)
    val: list[Row] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    manifest: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def source_files(source: Source) -> list[Path]:
    path = Path(source.path)
    if path.is_dir():
        return row_files(path / "rows") if (path / "rows").is_dir() else row_files(path)
    return [path] if path.exists() else []


def _input_name(source: Source, file: Path) -> str:
    """A row file as the manifest names it: by its source, not by where the run directory happens
    to be (the same rows give the same manifest in any folder)."""
    path = Path(source.path)
    return f"{source.name}:{file.relative_to(path) if path.is_dir() else file.name}"


def sample_source(source: Source, rows: list[Row], seed: int) -> list[Row]:
    """Seeded by (seed, source, row id) only: other sources cannot change which rows are taken."""
    scored = sorted(((unit(seed, "sample", source.name, r.id), r) for r in rows), key=lambda x: (x[0], x[1].id))
    kept = [r for u, r in scored if u < source.sample_rate]
    return kept[:source.max_rows] if source.max_rows else kept


def _rank(row: Row) -> tuple:
    """Best first: rating, verified, then a stable tie-break."""
    return (-(getattr(row, "rating", None) or 0), not row.verification.passed, row.id)


def assemble(mix: Mix) -> Snapshot:
    snap = Snapshot()
    inputs, loaded = {}, []
    lane_input = defaultdict(lambda: {"rows": 0, "passed": 0, "hashes": set()})
    for source in mix.sources:
        files = source_files(source)
        if not files:
            message = f"source `{source.name}`: no rows at {source.path}"
            if not source.optional:
                raise AssemblyError(message + " (a required source; mark it optional = true to allow this)")
            snap.warnings.append(message + " (optional: skipped)")
            continue
        for f in files:
            inputs[_input_name(source, f)] = hashlib.sha256(f.read_bytes()).hexdigest()
        picked = []
        for row in (row for f in files for row in iter_rows(f, Row)):  # one row at a time, as a model
            if (source.include_lanes and row.lane not in source.include_lanes) or row.lane in source.exclude_lanes:
                continue
            stats = lane_input[row.lane]
            stats["rows"] += 1
            stats["passed"] += row.verification.passed
            stats["hashes"].add(answer_hash(row.response, row.lang))
            if row.task in CODE_TASKS and not row.verification.passed:
                snap.rejected.append(_reject(row, source, "answer not accepted by the oracle"))
                continue
            if mix.licenses and not permitted(row.provenance.license, mix.licenses):
                licence = row.provenance.license or UNKNOWN
                snap.rejected.append(_reject(row, source, LICENCE, f"{LICENCE}: {licence}", licence=licence))
                continue
            picked.append(HeldRow.of(row))  # held compressed from here on: a night's rows fit in memory
        for row in sample_source(source, picked, mix.seed):
            loaded.append((source, row.model_copy(update={"mix_weight": source.weight})))
    bench = BenchIndex(mix.bench, mix.ngram) if mix.bench else None
    clean = []
    for source, row in loaded:
        hit = bench and (bench.overlap(row.response) or bench.overlap(row.prompt))
        if hit:
            snap.rejected.append(_reject(row, source, OVERLAP, f"{OVERLAP}: `{hit}`"))
        else:
            clean.append((source, row))
    unique = _dedup(clean, mix, snap)
    for source, row in unique:
        group = answer_hash(row.response, row.lang)
        is_val = unit(mix.seed, "split", group) < mix.share_for(row.lane)
        (snap.val if is_val else snap.train).append(row.model_copy(update={"mix_source": source.name}))
    snap.train.sort(key=lambda r: r.id)
    snap.val.sort(key=lambda r: r.id)
    _readiness(mix, lane_input, snap)
    snap.manifest = _manifest(mix, snap, inputs, lane_input, bench)
    return snap


LICENCE, OVERLAP = "licence not accepted", "overlaps the held-out bench"  # rejection kinds the manifest counts


def _reject(row: Row, source: Source, kind: str, reason: str | None = None, **more) -> Rejection:
    return Rejection(kind, reason or kind, {"id": row.id, "lane": row.lane, "task": row.task, "source": source.name,
                                            **more})


def dedup_key(row: Row) -> str:
    """What makes two rows the same example. For most tasks the answer (prompts are paraphrases of
    one content); a repair row is its broken input and its fix, so each distinct mutant of one
    declaration stays (they still share a split group: see `answer_hash`)."""
    if row.task in ("repair", "selfrepair"):
        broken = getattr(row, "broken", None) or row.prompt
        return answer_hash(row.response + "\0" + broken, row.lang)
    return answer_hash(row.response, row.lang)


def _dedup(rows: list[tuple[Source, Row]], mix: Mix, snap: Snapshot) -> list[tuple[Source, Row]]:
    groups: dict[str, list[tuple[Source, Row]]] = defaultdict(list)
    for source, row in rows:
        groups[dedup_key(row)].append((source, row))
    kept = []
    for _, members in sorted(groups.items()):
        if len(members) > 1:  # (a rank reads the whole row)
            members.sort(key=lambda m: _rank(m[1]))
        kept.append(members[0])
        for source, row in members[1:]:
            snap.rejected.append(_reject(row, source, "duplicate", f"duplicate of {members[0][1].id}"))
    if mix.dedup.near_duplicates:
        kept = _near_dedup(kept, mix, snap)
    return kept


def _near_dedup(rows, mix: Mix, snap: Snapshot):
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=mix.dedup.threshold, num_perm=mix.dedup.num_perm)
    kept = []
    for source, row in sorted(rows, key=lambda m: _rank(m[1])):
        sig = MinHash(num_perm=mix.dedup.num_perm, seed=mix.seed)
        for tok in set(tokens(row.response)):
            sig.update(tok.encode())
        near = lsh.query(sig)
        if near:
            snap.rejected.append(_reject(row, source, "near-duplicate answer", f"near-duplicate answer of {sorted(near)[0]}"))
            continue
        lsh.insert(row.id, sig)
        kept.append((source, row))
    return kept


def _readiness(mix: Mix, lane_input, snap: Snapshot) -> None:
    final = Counter(r.lane for r in snap.train + snap.val)
    for lane in sorted(set(lane_input) | set(final)):
        rule = mix.readiness_for(lane)
        if rule is None:
            continue
        stats = lane_input[lane]
        unique_ratio = len(stats["hashes"]) / max(1, stats["rows"])
        compile_pass = stats["passed"] / max(1, stats["rows"])
        problems = []
        if final[lane] < rule.min_rows:
            problems.append(f"{final[lane]} rows < min_rows {rule.min_rows}")
        if unique_ratio < rule.min_unique_ratio:
            problems.append(f"unique-answer ratio {unique_ratio:.3f} < {rule.min_unique_ratio}")
        if compile_pass < rule.min_compile_pass:
            problems.append(f"compile-pass rate {compile_pass:.3f} < {rule.min_compile_pass}")
        for problem in problems:
            message = f"lane `{lane}` is not ready: {problem}"
            if mix.strict:
                raise AssemblyError(message)
            snap.warnings.append(message)


def _histogram(rows: list[Row], seq_len: int) -> dict:
    edges = [e for e in (128, 256, 512, 1024, 2048, 4096, 8192) if e < seq_len] + [seq_len]
    bins = Counter()
    over = 0
    for row in rows:
        n = sum(bpe_count(m.content, "gpt-4o") + 4 for m in row.messages)
        over += n > seq_len
        bins[next((f"<={e}" for e in edges if n <= e), f">{seq_len}")] += 1
    return {"seq_len": seq_len, "tokenizer": "o200k_base", "bins": {k: bins[k] for k in
                                                                  [f"<={e}" for e in edges] + [f">{seq_len}"]},
            "truncated": over}


def _count(rows: list[Row], key) -> dict:
    return dict(sorted(Counter(key(r) for r in rows).items()))


def _manifest(mix: Mix, snap: Snapshot, inputs: dict, lane_input, bench) -> dict:
    rows = snap.train + snap.val
    by_lane = {}
    for lane in sorted({r.lane for r in rows} | set(lane_input)):
        stats = lane_input[lane]
        by_lane[lane] = {"train": sum(r.lane == lane for r in snap.train), "val": sum(r.lane == lane for r in snap.val),
                         "input_rows": stats["rows"],
                         "unique_answer_ratio": round(len(stats["hashes"]) / max(1, stats["rows"]), 4),
                         "compile_pass_rate": round(stats["passed"] / max(1, stats["rows"]), 4)}
    versions = {"python": platform.python_version()}
    for pkg in ("synth", "pydantic", "tree-sitter", "bpe-openai"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "seed": mix.seed,
        "counts": {"train": len(snap.train), "val": len(snap.val), "rejected": len(snap.rejected)},
        "by_lane": by_lane,
        "by_task": {"train": _count(snap.train, lambda r: r.task), "val": _count(snap.val, lambda r: r.task)},
        "by_source": {"train": _count(snap.train, lambda r: r.mix_source),
                      "val": _count(snap.val, lambda r: r.mix_source)},
        "by_stage": {"train": _count(snap.train, lambda r: r.provenance.stage),
                     "val": _count(snap.val, lambda r: r.provenance.stage)},
        "licenses": {"accepted": mix.licenses or "all",
                     "train": _count(snap.train, lambda r: r.provenance.license or UNKNOWN),
                     "val": _count(snap.val, lambda r: r.provenance.license or UNKNOWN),
                     "dropped": _count([r for r in snap.rejected if r.kind == LICENCE], lambda r: r.about["licence"])},
        "mix_weights": {s.name: s.weight for s in mix.sources},
        "mix_weight_semantics": "per-row loss weight applied by the trainer (no physical repeats)",
        "rejected_by_reason": _count(snap.rejected, lambda r: r.kind),
        "cost_usd": round(sum(r.cost_usd for r in rows), 6),
        "length": _histogram(rows, mix.seq_len),
        "decontamination": {"bench_files": bench.files if bench else 0, "ngram": mix.ngram,
                            "dropped": sum(r.kind == OVERLAP for r in snap.rejected)},
        "inputs": dict(sorted(inputs.items())),
        "warnings": snap.warnings,
        "versions": versions,
        "platform": sys.platform,
    }


def write_snapshot(snap: Snapshot, out_dir: str | Path, parquet: bool = True) -> dict:
    out = Path(out_dir)
    paths = {"train": rows_path(out, "train"), "val": rows_path(out, "val"), "rejected": out / "rejected" / "assemble.jsonl",
             "manifest": out / "manifest.json", "trl_train": out / "trl" / "train.jsonl",
             "trl_val": out / "trl" / "val.jsonl"}
    write_rows(paths["train"], snap.train)
    write_rows(paths["val"], snap.val)
    write_jsonl(paths["rejected"], [r.to_json() for r in snap.rejected])
    for split in ("train", "val"):  # TRL's conversational format: messages only
        write_jsonl(paths[f"trl_{split}"], ({"messages": r.model_dump(mode="json")["messages"]}
                                            for r in getattr(snap, split)))
    if parquet:  # the snapshot as a dataset: parquet splits and a card
        files = {}
        for split in ("train", "val"):
            if getattr(snap, split):
                files[split] = f"data/{split}.parquet"
                write_parquet(getattr(snap, split), out / files[split])
                paths[f"parquet_{split}"] = out / files[split]
        paths["card"] = out / "README.md"
        paths["card"].write_text(dataset_card(snap, files), encoding="utf-8")
    write_json(paths["manifest"], snap.manifest)
    return {k: str(v) for k, v in paths.items()}
