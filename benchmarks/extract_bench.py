"""`synth bench extract`: extraction throughput on a generated Rust corpus (≥ 20 MB by default).

The corpus is many small crates built from the bundled example crate (benchmarks/rust_corpus.py).
Each run extracts everything (declarations with their context) with a fresh process; the median
of `repeats` runs is reported, with and without writing the JSONL."""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.fixtures.rust_corpus import write_corpus
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.jsonl import write_jsonl


def run_extract_bench(mb: float = 20.0, repeats: int = 3, jobs: int | None = None) -> dict:
    jobs = jobs or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="synth-bench-extract-") as tmp:
        corpus = write_corpus(Path(tmp) / "corpus", int(mb * 1_000_000))
        extract_times, total_times = [], []
        result = None
        for _ in range(max(1, repeats)):
            start = time.perf_counter()
            result = extract_paths([Path(tmp) / "corpus"], ExtractOptions(jobs=jobs))
            extracted = time.perf_counter()
            write_jsonl(Path(tmp) / "decls.jsonl", result.declarations)
            done = time.perf_counter()
            extract_times.append(extracted - start)
            total_times.append(done - start)
        seconds = statistics.median(extract_times)
        with_write = statistics.median(total_times)
        megabytes = result.bytes_read / 1e6
        return {
            "mb": round(megabytes, 2),
            "files": result.files_read,
            "crates": corpus["crates"],
            "declarations": len(result.declarations),
            "seconds": round(seconds, 3),
            "mb_per_s": round(megabytes / seconds, 2),
            "decl_per_s": round(len(result.declarations) / seconds),
            "mb_per_s_with_jsonl_write": round(megabytes / with_write, 2),
            "runs_s": [round(t, 3) for t in extract_times],
            "jobs": jobs,
        }


def bench(args) -> dict:
    """`synth bench extract`."""
    return run_extract_bench(mb=args.mb, repeats=min(args.repeats, 3), jobs=args.jobs)
