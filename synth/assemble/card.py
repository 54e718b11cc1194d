"""A snapshot as a dataset: parquet splits under `data/` and a dataset card (`README.md` with the
Hugging Face Hub's YAML metadata), so the folder can be pushed to the Hub as it is and
`datasets.load_dataset("parquet", data_dir=...)` loads it."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from synth.extract.package import UNKNOWN, spdx_ids

SPLITS = {"train": "train", "val": "validation"}  # snapshot split -> the Hub's name


def parquet_records(rows) -> list[dict]:
    """What a dataset user reads of each row: the conversation, where the code comes from, and
    the compiler's verdict."""
    return [parquet_record(r.model_dump(mode="json")) for r in rows]


def parquet_record(row: dict) -> dict:
    prov, check = row["provenance"], row["verification"]
    return {"id": row["id"], "lang": row["lang"], "lane": row["lane"], "task": row["task"],
            "messages": row["messages"], "mix_weight": row["mix_weight"],
            "source_name": prov.get("source_name"), "source_version": prov.get("source_version"),
            "license": prov.get("license") or UNKNOWN, "stage": prov["stage"],
            "verified": check["passed"], "oracle": check["oracle"], "toolchain": check["toolchain"],
            "scope": check["scope"], "diagnostic_codes": list(row.get("diagnostic_codes") or [])}


PARQUET_BATCH = 2000  # rows turned into a table at a time: a night's split is never whole in memory


def parquet_schema():
    """The columns of `parquet_records`, fixed (inferred per batch, a batch without a value would
    give a column another type)."""
    import pyarrow as pa
    text, texts = pa.string(), pa.list_(pa.string())
    return pa.schema([("id", text), ("lang", text), ("lane", text), ("task", text),
                      ("messages", pa.list_(pa.struct([("role", text), ("content", text)]))),
                      ("mix_weight", pa.float64()), ("source_name", text), ("source_version", text),
                      ("license", text), ("stage", text), ("verified", pa.bool_()), ("oracle", text),
                      ("toolchain", text), ("scope", text), ("diagnostic_codes", texts)])


def write_parquet(rows, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = parquet_schema()
    with pq.ParquetWriter(str(path), schema) as writer:
        for start in range(0, len(rows), PARQUET_BATCH):
            batch = parquet_records(rows[start:start + PARQUET_BATCH])
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def dataset_card(snap, files: dict[str, str]) -> str:
    """The card: YAML metadata (licences, splits and their sizes, task categories, where each
    split's files are), then in prose the sources, toolchain, verification and funnel."""
    import yaml
    rows = snap.train + snap.val
    licenses = Counter(r.provenance.license or UNKNOWN for r in rows)
    ids = sorted({i.lower() for expr in licenses for i in spdx_ids(expr)})
    size = len(rows)
    meta = {
        "license": ["other" if i == UNKNOWN else i for i in ids] or ["other"],
        "language": ["en", "code"],
        "task_categories": ["text-generation"],
        "tags": ["code", "synthetic", "compiler-verified", *sorted({r.lang for r in rows})],
        "size_categories": ["n<1K" if size < 1_000 else "1K<n<10K" if size < 10_000 else
                            "10K<n<100K" if size < 100_000 else "100K<n<1M"],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": SPLITS[s], "path": files[s]} for s in SPLITS if s in files]}],
        "dataset_info": {"splits": [{"name": SPLITS[s], "num_examples": len(getattr(snap, s))}
                                    for s in SPLITS if s in files]},
    }
    sources = Counter((r.provenance.source_name or "?", r.provenance.source_version or "",
                       r.provenance.license or UNKNOWN) for r in rows)
    checks = [(r.verification.toolchain, r.verification.scope) for r in rows]  # one read of each held row
    toolchains, scopes = Counter(t for t, _ in checks), Counter(s for _, s in checks)
    manifest = snap.manifest
    lines = ["---", yaml.safe_dump(meta, sort_keys=False).rstrip(), "---", "",
             "# Compiler-verified code rows", "",
             f"{size} rows ({len(snap.train)} train, {len(snap.val)} validation) made by synth: every code "
             "answer was checked by a compiler, and a repair row's broken code was rejected by it, with "
             "the compiler's own diagnostic in the prompt.", "",
             "## Sources", "", "| source | version | licence | rows |", "|---|---|---|---|"]
    lines += [f"| {name} | {version} | {lic} | {n} |" for (name, version, lic), n in sorted(sources.items())]
    lines += ["", "Licences (SPDX expressions): " + ", ".join(f"{lic} {n}" for lic, n in sorted(licenses.items())) + ".",
              "", "## Verification", ""]
    lines += [f"- toolchain `{t}`: {n} rows" for t, n in sorted(toolchains.items())]
    lines += [f"- checked {scope}: {n} rows" for scope, n in sorted(scopes.items())]
    lines += ["", "## Funnel", "",
              "| lane | input rows | compile pass rate | train | validation |", "|---|---|---|---|---|"]
    lines += [f"| {lane} | {s['input_rows']} | {s['compile_pass_rate']} | {s['train']} | {s['val']} |"
              for lane, s in manifest.get("by_lane", {}).items()]
    codes = Counter(c for r in rows for c in (getattr(r, "diagnostic_codes", None) or []))
    shown = codes.most_common(25)
    lines += ["", "## Error codes", "",
              f"The compiler's error codes in the repair rows' diagnostics ({len(codes)} distinct"
              + (f", the {len(shown)} most frequent" if len(codes) > len(shown) else "") + "):", "",
              ", ".join(f"{code} {n}" for code, n in shown) or "none"]
    rejected = manifest.get("rejected_by_reason", {})
    lines += ["", "Left out at assembly: " + (", ".join(f"{reason} {n}" for reason, n in rejected.items()) or "none") + ".",
              "", "Row fields, counts and versions: `manifest.json`. Full rows (with the checked sources): "
              "`train.jsonl.zst`, `val.jsonl.zst` (JSON lines, zstd-compressed: `zstdcat train.jsonl.zst | jq`, "
              "pandas `read_json(..., lines=True)`, duckdb `read_json`). The conversations alone, for TRL: `trl/`.", ""]
    return "\n".join(lines)
