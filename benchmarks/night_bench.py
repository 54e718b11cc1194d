"""`synth bench night`: a night as a team runs it (examples/night/synth.toml, 61 Debian crates synth
has not seen), measured in one run: the plan against the cold run's own seconds; the cold run
uninterrupted (wall, s/MB, peak RSS of its process tree, disk); the same run ended by SIGTERM at a
third of that wall and by SIGKILL at two thirds, each resumed (outputs byte-identical, verdicts
compiled again, temp folders left); the ten smallest crates locally and on a 2-node local Ray
cluster (identical bytes); `synth bench crates`' s/MB at this commit; the night's dataset loaded
with `datasets`, its report drawn by chromium; and what all of Debian would take on a cluster.

Every arm is a `synth` subprocess with its own cold cache and temp folder, as cron would start it."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

from benchmarks.peak_rss import PeakRss

REPO = Path(__file__).resolve().parent.parent
NIGHT = REPO / "examples" / "night" / "synth.toml"
RAY_CRATES = 10  # the subset run on Ray: the smallest crates of the night
# The farm's efficiency when the Ray arm is skipped: the last one measured (17 night crates, 2 nodes).
RAY_EFFICIENCY_UNMEASURED = 0.87
# Outputs a resumed or Ray run must reproduce byte for byte (stats/, ledgers/ and the lock hold
# times and pids; the snapshot card's bytes are compared too).
COMPARED = ("rows", "rejected", "tasks", "train.jsonl.zst", "val.jsonl.zst", "manifest.json", "snapshots")


def source_mb(paths: list[Path]) -> float:
    """MB of library Rust, as `synth bench crates` counts it."""
    return sum(p.stat().st_size for c in paths for p in c.rglob("*.rs") if "target" not in p.parts) / 1e6


def night_sources(config: Path) -> list[Path]:
    data = tomllib.loads(config.read_text())
    return [(config.parent / s["path"]).resolve() for s in data.get("sources", [])]


def arm_config(config: Path, sources: list[Path], arm: Path, extra: str = "") -> Path:
    """The night's config for one arm: its own out and cold cache under `arm`, the given sources;
    every other table copied as written."""
    blocks = re.split(r"(?m)^(?=\[)", config.read_text())
    kept = [b for b in blocks if b.startswith("[") and not b.startswith(("[run]", "[[sources]]"))]
    data = tomllib.loads(config.read_text())
    run = {**data.get("run", {}), "out": str(arm / "run"), "cache_dir": str(arm / "cache")}
    head = "[run]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in run.items()) + extra + "\n"
    head += "".join(f'[[sources]]\npath = "{s}"\nlang = "rust"\n\n' for s in sources)
    arm.mkdir(parents=True, exist_ok=True)
    path = arm / "synth.toml"
    path.write_text(head + "".join(kept))
    return path


class Watched:
    """A `synth` subprocess in its own session and temp folder; the peak RSS of its whole process
    tree is sampled every 0.2 s."""

    def __init__(self, args: list[str], tmp: Path):
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "TMPDIR": str(tmp)}
        self.log = open(tmp.parent / f"{tmp.name}.log", "ab")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "synth.cli.main", *args], cwd=REPO, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._rss = PeakRss(self.proc.pid, every_s=0.2)
        self.ended: float | None = None

    @property
    def peak(self) -> int:
        return self._rss.peak

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self.ended is None:
            self.ended = time.perf_counter()
            self._rss.stop()
            self.log.close()
        return code

    def stop(self, sig: int) -> int:
        """`sig` to the run (SIGTERM: as cron's timeout sends it; SIGKILL: the whole process group,
        as a machine that dies would leave it)."""
        if sig == signal.SIGKILL:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        return self.wait()

    @property
    def wall(self) -> float:
        """Seconds it has run; once it ended, until it ended."""
        return (self.ended or time.perf_counter()) - self.started


def synth_json(*args: str) -> dict:
    """What `synth ARGS --json` printed (a bench that exits 1 on a failed check of its own prints its figures too)."""
    done = subprocess.run([sys.executable, "-m", "synth.cli.main", *args], cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"synth {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def output_digests(run: Path) -> dict[str, str]:
    digests = {}
    for name in COMPARED:
        path = run / name
        for f in sorted([path] if path.is_file() else path.rglob("*") if path.is_dir() else []):
            if f.is_file():
                digests[str(f.relative_to(run))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return digests


def differences(a: Path, b: Path) -> list[str]:
    da, db = output_digests(a), output_digests(b)
    return sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))


def redone_verdicts(cache: Path) -> int:
    from oracles.cache import VerdictCache
    store = VerdictCache(cache / "verdicts")
    try:
        return store.redone()
    finally:
        store.close()


def disk_mb(*paths: Path) -> float:
    return sum(f.stat().st_size for p in paths for f in p.rglob("*") if f.is_file()) / 1e6


def left_in(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir()) if tmp.is_dir() else []


def planned_seconds(plan: dict) -> float:
    return float(plan["seconds"]["total"])


def first_run_reference(plan: dict, stats: dict) -> dict:
    """FIRST_RUN_S (synth/lanes/estimate.py) as a cold run measured it: the repair lane's seconds
    split into its crates' set-up (the mean of the copies it checked in, for each crate with
    mutants in the share that had any) and the rest per planned mutant; the doc lane's seconds an
    item; the writing's seconds a row."""
    summary = stats["summary"]
    lanes, planned = summary["stages"], {r["stage"]: r for r in plan["stages"]}
    repair = lanes.get("repair") or {}
    setups = [f[2] for f in (repair.get("crates_compiled") or {}).values() if len(f) == 3 and f[0]]
    crates = len(repair.get("crates") or {}) or 1
    crate_s = sum(setups) / crates
    mutants = planned.get("repair", {}).get("compiler_candidates") or 1
    doc = lanes.get("doclane") or {}
    rows = sum(lane.get("rows", 0) for lane in lanes.values()) or 1
    return {"repair_crate": round(crate_s, 3),
            "repair_mutant": round((repair.get("seconds", 0) - crate_s * crates) / mutants, 5),
            "doc_item": round(doc.get("seconds", 0) / max(1, doc.get("processed", 0)), 5),
            "written_row": round((summary.get("seconds") or {}).get("write", 0) / rows, 6)}


def cold_run(config: Path, arm: Path) -> dict:
    run = Watched(["run", "--config", str(config)], arm / "tmp")
    code = run.wait()
    if code != 0:
        raise RuntimeError(f"the cold run exited {code}: see {arm / 'tmp.log'}")
    return {"wall_s": run.wall, "peak_rss": run.peak, "tmp_left": left_in(arm / "tmp")}


def stored_verdicts(cache: Path) -> int:
    """Verdicts the run's cache holds so far (read beside the running process: sqlite allows it)."""
    import diskcache
    if not (cache / "verdicts" / "cache.db").is_file():
        return 0
    store = diskcache.Cache(str(cache / "verdicts"))
    try:
        return len(store)
    finally:
        store.close()


def killed_and_resumed(config: Path, arm: Path, verdicts: int, wall: float) -> dict:
    """The run ended by SIGTERM once it stored a third of the cold run's `verdicts`, resumed, ended
    by SIGKILL halfway through what was left (about two thirds), resumed to the end (each kill at
    the latest after the cold run's wall)."""
    codes, segments, killed_at = [], [], []
    for sig in (signal.SIGTERM, signal.SIGKILL, None):
        start = stored_verdicts(arm / "cache")
        target = verdicts / 3 if not start else start + (verdicts - start) / 2
        run = Watched(["run", "--config", str(config)], arm / "tmp")
        if sig is not None:
            while run.wait(timeout=0.2) is None:
                now = stored_verdicts(arm / "cache")
                if (now >= target and now > start) or run.wall > wall:
                    killed_at.append(now)
                    run.stop(sig)
                    break
        codes.append(run.wait())
        segments.append(round(run.wall, 1))
    stats = json.loads((arm / "run" / "stats" / "run.json").read_text())["summary"]["stages"]
    return {"exit_codes": codes, "segments_s": segments, "killed_at_verdicts": killed_at, "of_verdicts": verdicts,
            "final_segment": {name: {k: lane.get(k) for k in ("items", "reused", "processed", "candidates_compiled")}
                              for name, lane in stats.items()}}


def ray_arms(config: Path, sources: list[Path], work: Path) -> dict:
    """The night's smallest crates (10, or all of a smaller night) locally and on a 2-node Ray
    cluster started here (1 CPU each)."""
    from ray.cluster_utils import Cluster
    subset = sorted(sources, key=lambda s: (source_mb([s]), s.name))[:RAY_CRATES]
    local = cold_run(arm_config(config, subset, work / "subset-local"), work / "subset-local")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        on_ray = arm_config(config, subset, work / "subset-ray",
                            extra=f'executor = "ray"\nray_address = "{cluster.address}"\n')
        ray_run = cold_run(on_ray, work / "subset-ray")
    finally:
        cluster.shutdown()
    diff = differences(work / "subset-local" / "run", work / "subset-ray" / "run")
    return {"crates": len(subset), "names": [s.name for s in subset], "mb": round(source_mb(subset), 3),
            "identical": not diff, "differ": diff[:10], "local_wall_s": round(local["wall_s"], 1),
            "wall_s": round(ray_run["wall_s"], 1), "tmp_left": len(ray_run["tmp_left"])}


def dataset_figures(run: Path, work: Path) -> dict:
    """The night's snapshot as a user takes it: `datasets.load_dataset` on the parquet splits,
    the card's licences and crates; `synth report` drawn by headless chromium."""
    import datasets
    import pyarrow.parquet as pq
    snapshot = sorted((run / "snapshots").iterdir())[-1]
    files = {"train": str(snapshot / "data" / "train.parquet"), "validation": str(snapshot / "data" / "val.parquet")}
    loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(work / "hf-cache"))
    table = pq.read_table(files["train"]).to_pylist() + pq.read_table(files["validation"]).to_pylist()
    card = (snapshot / "README.md").read_text()
    codes = Counter(c for r in table for c in (r.get("diagnostic_codes") or []))
    figures = {"rows": sum(len(s) for s in loaded.values()), "load_dataset_ok": len(table) == sum(len(s) for s in loaded.values()),
               "licences": dict(Counter(r.get("license") for r in table).most_common()),
               "crates": len({r.get("source_name") for r in table}), "error_codes": len(codes),
               "card": str(snapshot / "README.md"), "card_names_every_crate": all(
                   f"| {name} |" in card for name in {r.get("source_name") for r in table})}
    if subprocess.run([sys.executable, "-m", "synth.cli.main", "report", str(run)], cwd=REPO,
                      capture_output=True).returncode == 0 and shutil.which("chromium"):
        shot = work / "report.png"
        subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1300,2600", f"--screenshot={shot}", (run / "report.html").as_uri()],
                       capture_output=True, timeout=120)
        figures["report_png"] = str(shot) if shot.is_file() else None
    return figures


def debian_rust() -> tuple[int, float]:
    """Debian's Rust crates (librust-*-dev packages that are not a feature's) and their installed
    size in MB, from apt's own index (no download)."""
    names = subprocess.run(["apt-cache", "pkgnames", "librust-"], capture_output=True, text=True).stdout.split()
    crates = sorted(n for n in names if n.endswith("-dev") and "+" not in n)
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", *crates], capture_output=True, text=True).stdout
    size_kb = sum(int(m) for m in re.findall(r"(?m)^Installed-Size: (\d+)", shown))
    return len(crates), size_kb / 1024


def projection(s_per_mb: float, sources: list[Path], nodes: int, cores: int, efficiency: float,
               measured: bool = True) -> dict:
    """Hours for every Debian crate on `nodes` machines of `cores` cores: Debian's MB of Rust (the
    installed size, scaled by this night's share of .rs bytes in its installed folders) times the
    night's s/MB on this machine's 2 cores, spread over nodes * cores / 2, at the efficiency the
    2-node Ray run showed against the same cores locally (capped at 1)."""
    crates, installed_mb = debian_rust()
    installed_here = disk_mb(*sources)
    share = source_mb(sources) / max(1e-9, installed_here)
    debian_mb = installed_mb * share
    efficiency = min(1.0, max(0.1, efficiency))
    hours = debian_mb * s_per_mb / (nodes * cores / (os.cpu_count() or 2)) / efficiency / 3600
    return {"debian_crates": crates, "debian_mb": round(debian_mb, 1), "rs_share_of_installed": round(share, 3),
            "nodes": nodes, "cores": cores, "efficiency": round(efficiency, 2), "efficiency_measured": measured,
            "hours": round(hours, 2),
            "command": "synth run --config debian.toml  # [run] executor = \"ray\", ray_address = \"ray://HEAD:10001\"",
            "cluster": f"ray start --head --num-cpus {cores} (one node), ray start --address HEAD:6379 "
                       f"--num-cpus {cores} on {nodes - 1} more, the same rustc on each"}


def bench(args) -> dict:
    config = Path(args.config) if getattr(args, "config", None) else NIGHT
    sources = [Path(c).resolve() for c in args.crates] if args.crates else night_sources(config)
    missing = [str(s) for s in sources if not s.is_dir()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} night crates are not installed ({missing[0]}, ...): make night-corpus")
    work = Path(args.out or REPO / "runs" / "bench-night").resolve()
    shutil.rmtree(work, ignore_errors=True)
    mb = source_mb(sources)
    cold = arm_config(config, sources, work / "cold")
    plan = synth_json("plan", "--config", str(cold), "--json")
    first = cold_run(cold, work / "cold")
    skip = set(getattr(args, "skip", ()) or ())
    if "killed" not in skip:
        killed = killed_and_resumed(arm_config(config, sources, work / "killed"), work / "killed",
                                    stored_verdicts(work / "cold" / "cache"), first["wall_s"])
        diff = differences(work / "cold" / "run", work / "killed" / "run")
        killed = {"resumed_identical": not diff, "differ": diff[:10],
                  # verdicts compiled though stored, beyond those the uninterrupted run compiled twice itself
                  "recompiled_after_resume": redone_verdicts(work / "killed" / "cache") - redone_verdicts(work / "cold" / "cache"),
                  "recompiled_in_cold_run": redone_verdicts(work / "cold" / "cache"),
                  "temp_left": len(left_in(work / "killed" / "tmp")), **killed}
    # 2 nodes of 1 CPU against this machine's 2 CPUs: the same cores, so local/Ray wall is the farm's efficiency
    ray = ray_arms(config, sources, work) if "ray" not in skip else None
    efficiency = ray["local_wall_s"] / max(1e-9, ray["wall_s"]) if ray else RAY_EFFICIENCY_UNMEASURED
    # the pinned corpus, or the same crates when the night was given as --crates; in the night's own
    # in-crate mode, so that its repair lane and the bench do the same work per declaration
    in_crate = tomllib.loads(config.read_text()).get("lanes", {}).get("repair", {}).get("in_crate", "fallback")
    crates_bench = synth_json("bench", "crates", "--json", "--out", str(work / "crates-bench"), "--in-crate", in_crate,
                              *(["--crates", *map(str, sources)] if args.crates else [])) if "crates" not in skip else {}
    crates_s_per_mb = crates_bench.get("wall_s_per_mb")
    s_per_mb = first["wall_s"] / mb
    cold_stats = json.loads((work / "cold" / "run" / "stats" / "run.json").read_text())["summary"]
    # what the crates bench times: extraction and the repair engine (the night adds the doc lane and the writing)
    repair_s_per_mb = (cold_stats["seconds"]["setup"] + cold_stats["stages"]["repair"]["seconds"]) / mb
    return {
        "crates": len(sources), "mb": round(mb, 3), "wall_s": round(first["wall_s"], 1), "s_per_mb": round(s_per_mb, 1),
        "skipped": sorted(skip),
        "crates_bench_s_per_mb": crates_s_per_mb,
        "crates_bench_identical": crates_bench.get("identical"),
        "s_per_mb_over_crates_bench": round(s_per_mb / crates_s_per_mb, 2) if crates_s_per_mb else None,
        "crates_bench_in_crate": in_crate, "repair_s_per_mb": round(repair_s_per_mb, 1),
        "repair_over_crates_bench": round(repair_s_per_mb / crates_s_per_mb, 2) if crates_s_per_mb else None,
        "peak_rss_gib": round(first["peak_rss"] / 2**30, 2),
        "disk_mb_per_source_mb": round(disk_mb(work / "cold" / "cache", work / "cold" / "run") / mb, 1),
        "killed": killed if "killed" not in skip else None,
        "cold_temp_left": len(first["tmp_left"]),
        "ray": ray,
        "dataset": dataset_figures(work / "cold" / "run", work),
        "plan_s": round(planned_seconds(plan), 1),
        "first_run_reference": first_run_reference(plan, json.loads((work / "cold" / "run" / "stats" / "run.json").read_text())),
        "plan_error": round(planned_seconds(plan) / first["wall_s"] - 1, 3),
        "projection": projection(s_per_mb, sources, nodes=args.nodes, cores=args.cores, efficiency=efficiency,
                                 measured=ray is not None),
    }
