"""`synth bench oracle --executor ray`: the same candidates checked by the local batched oracle
and by the oracle farm on a Ray cluster (one machine here), interleaved, medians; plus the cost of
one cluster task with nothing in it, so a reader can size batches for N nodes (README)."""
from __future__ import annotations

import math
import statistics
import time

from oracles.factory import build_oracle
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate


def _noop(i: int) -> int:
    return i


def ray_side_by_side(candidates: list[Candidate], expect_pass: list[bool], repeats: int, jobs: int,
                     address: str | None = None) -> dict:
    from synth.executor.farm import FarmOracle
    from synth.executor.cluster import RayCluster
    cluster = RayCluster(address)
    try:
        cpus = cluster.cpus()
        batch = math.ceil(len(candidates) / cpus)
        settings = OracleSettings(jobs=1)  # one rustc per worker: `cpus` at once, as the local side's `jobs`
        cluster.map(_noop, [(i,) for i in range(cpus * 4)])  # workers started before anything is timed
        local_s, ray_s, same = [], [], True
        farm = None
        for _ in range(repeats):
            local = RustOracle(OracleSettings(jobs=jobs))
            start = time.perf_counter()
            reference = local.check(candidates, expect_pass=expect_pass)
            local_s.append(time.perf_counter() - start)
            farm = FarmOracle(build_oracle("rustc", settings, None), build_oracle, settings, cluster, batch)
            start = time.perf_counter()
            found = farm.check(candidates, expect_pass=expect_pass)
            ray_s.append(time.perf_counter() - start)
            same = same and all(a.same_result(b) for a, b in zip(reference, found))
        tasks = 200
        start = time.perf_counter()
        cluster.map(_noop, [(i,) for i in range(tasks)])
        per_task_ms = 1000 * (time.perf_counter() - start) / tasks
        start = time.perf_counter()
        for i in range(20):
            cluster.call(_noop, i)
        round_trip_ms = 1000 * (time.perf_counter() - start) / 20
        return {"executor": "ray", "nodes": len(cluster.nodes()), "cpus": cpus, "local_jobs": jobs,
                "n": len(candidates), "batch": batch, "tasks_per_check": farm.tasks if farm else 0,
                "worker_processes": len(farm.worker_pids) if farm else 0,
                "local_s": round(statistics.median(local_s), 3), "ray_s": round(statistics.median(ray_s), 3),
                "overhead": round(statistics.median(ray_s) / statistics.median(local_s), 3),
                "identical": same, "per_task_overhead_ms": round(per_task_ms, 2),
                "one_task_round_trip_ms": round(round_trip_ms, 2)}
    finally:
        cluster.close()
