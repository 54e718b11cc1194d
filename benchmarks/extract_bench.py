"""`synth bench extract`: extraction throughput and memory.

- generated: a corpus of many small crates built from the bundled example crate
  (benchmarks/rust_corpus.py), extracted in this process; the median of `repeats` runs.
- real (`--crates PATH...`): `synth extract` run as a user runs it, in a fresh process, on real
  sources: MB/s and declarations/s of the whole run (the JSONL written and synced), and the peak
  memory of the process with its workers (their RSS summed, sampled every 20 ms).
- scaling: one real crate copied 1x, 4x and 16x into the same files (each copy's item names
  suffixed, so the bigger crate stays valid and its names distinct), extracted serially: time
  and memory (above an empty run's: interpreter start and imports) should grow with the
  copies, not faster (the ratios)."""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fixtures.rust_corpus import write_corpus
from benchmarks.peak_rss import PeakRss
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.rust.parse import module_path_for, parse_rust
from synth.extract.rust.index import NAMED_KINDS
from synth.rows.jsonl import write_jsonl

REPO = Path(__file__).resolve().parent.parent
REGISTRY = Path("/usr/share/cargo/registry")
COPIES = (1, 4, 16)


def run_extract_bench(mb: float = 20.0, repeats: int = 3, jobs: int | None = None,
                      crates: list[Path] | None = None) -> dict:
    jobs = jobs or os.cpu_count() or 1
    result = {"generated": generated_corpus(mb, repeats, jobs)}
    if crates:
        result["real"] = real_sources(crates, repeats, jobs)
        result["scaling"] = scaling(scale_crate(crates), repeats)
    return result


def generated_corpus(mb: float, repeats: int, jobs: int) -> dict:
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
            "mb": round(megabytes, 2), "files": result.files_read, "crates": corpus["crates"],
            "declarations": len(result.declarations), "seconds": round(seconds, 3),
            "mb_per_s": round(megabytes / seconds, 2), "decl_per_s": round(len(result.declarations) / seconds),
            "mb_per_s_with_jsonl_write": round(megabytes / with_write, 2),
            "runs_s": [round(t, 3) for t in extract_times], "jobs": jobs,
        }


def real_sources(paths: list[Path], repeats: int, jobs: int) -> dict:
    runs = [run_cli_extract(paths, jobs) for _ in range(max(1, repeats))]
    seconds = statistics.median(r["seconds"] for r in runs)
    summary = runs[0]["summary"]
    megabytes = summary["bytes_read"] / 1e6
    return {
        "paths": [str(p) for p in paths], "mb": round(megabytes, 2), "files": summary["files_read"],
        "declarations": summary["declarations"], "out_mb": runs[0]["out_mb"], "seconds": round(seconds, 2),
        "mb_per_s": round(megabytes / seconds, 2), "decl_per_s": round(summary["declarations"] / seconds),
        "peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in runs)),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 1),
        "runs_s": [round(r["seconds"], 2) for r in runs], "jobs": jobs,
    }


def run_cli_extract(paths: list[Path], jobs: int) -> dict:
    """`synth extract PATHS --out ...` in a fresh process: wall time, the peak of the summed RSS
    of it and its workers, CPU seconds of all of them, and its JSON summary."""
    with tempfile.TemporaryDirectory(prefix="synth-bench-extract-") as tmp:
        out = Path(tmp) / "declarations.jsonl"
        command = [sys.executable, "-m", "synth.cli.main", "extract", *map(str, paths), "--out", str(out), "--json",
                   "--jobs", str(jobs)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        start = time.perf_counter()
        before = os.times()
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = PeakRss(process.pid)
        stdout, stderr = process.communicate()
        seconds = time.perf_counter() - start
        after = os.times()
        sampler.stop()
        if process.returncode != 0:
            raise RuntimeError(f"synth extract failed: {stderr[-2000:]}")
        return {"seconds": seconds, "peak_rss_mb": sampler.peak / 2**20, "summary": json.loads(stdout),
                "out_mb": round(out.stat().st_size / 1e6, 1),
                "cpu_s": (after.children_user - before.children_user) + (after.children_system - before.children_system)}


def scale_crate(paths: list[Path]) -> Path:
    """The crate to scale: bytes (trait-heavy, large contexts) or semver from the registry when
    installed, else the example crate."""
    for pattern in ("bytes-1.*", "semver-1.*"):
        for path in [*paths, REGISTRY]:
            found = sorted(path.glob(pattern)) if path.is_dir() else []
            if found:
                return found[0]
    return REPO / "examples" / "rust"


def scaling(crate: Path, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="synth-bench-scale-") as tmp:
        empty = Path(tmp) / "empty"
        empty.mkdir()
        empty_runs = [run_cli_extract([empty], 1) for _ in range(max(1, repeats))]
        baseline = statistics.median(r["peak_rss_mb"] for r in empty_runs)
        startup = statistics.median(r["seconds"] for r in empty_runs)
        seconds, memory, declarations = [], [], []
        for copies in COPIES:
            scaled = write_copies(crate, Path(tmp) / f"x{copies}", copies)
            runs = [run_cli_extract([scaled], 1) for _ in range(max(1, repeats))]
            seconds.append(statistics.median(r["seconds"] for r in runs) - startup)
            memory.append(statistics.median(r["peak_rss_mb"] for r in runs) - baseline)
            declarations.append(runs[0]["summary"]["declarations"])
    return {
        "crate": str(crate), "copies": list(COPIES), "declarations": declarations,
        "seconds_above_empty_run": [round(s, 2) for s in seconds], "rss_above_empty_run_mb": [round(m) for m in memory],
        "empty_run_s": round(startup, 2), "empty_run_rss_mb": round(baseline),
        "declaration_ratios": [round(d / declarations[0], 2) for d in declarations],
        "time_ratios": [round(s / seconds[0], 2) for s in seconds],
        "memory_ratios": [round(m / memory[0], 2) for m in memory],
    }


def write_copies(crate: Path, out: Path, copies: int) -> Path:
    """The crate's library (src/) with each file holding `copies` copies of itself; copy k > 0 has
    every item name of the crate suffixed `_k` and no inner attributes (they may only open a file)."""
    sources = {p: p.read_text() for p in sorted((crate / "src").rglob("*.rs"))}
    names = set()
    for path, text in sources.items():
        rel = str(path.relative_to(crate))
        names |= {i.name for i in parse_rust(text.encode(), module_path_for(rel, rel)).items
                  if i.kind in NAMED_KINDS and i.name}
    word = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    inner_attribute = re.compile(r"^\s*#!\[.*?\]\s*$", re.M | re.S)
    for path, text in sources.items():
        target = out / path.relative_to(crate)
        target.parent.mkdir(parents=True, exist_ok=True)
        renamed = [text] + [word.sub(rf"\g<1>_{k}", inner_attribute.sub("", text)) for k in range(1, copies)]
        target.write_text("\n".join(renamed))
    (out / "Cargo.toml").write_text(f'[package]\nname = "scaled-x{copies}"\nversion = "0.0.0"\n')
    return out


def bench(args) -> dict:
    """`synth bench extract`."""
    return run_extract_bench(mb=args.mb, repeats=min(args.repeats, 3), jobs=args.jobs,
                             crates=[Path(c) for c in args.crates] if args.crates else None)
