"""An oracle whose checks run on a cluster (synth/executor/cluster.py): the oracle farm.

It speaks the oracle protocol by wrapping the driver's own oracle (`local`): the driver answers
what its verdict cache holds, cuts the rest into batches (one cluster task each, so a task's
overhead is paid once per batch, never per candidate; a crate's splices stay together), and each
worker checks its batch with the same oracle, built there once per process, without a cache. The
verdicts come back in order and the driver stores them. Everything else (`id`, `toolchain`,
`flags`, a crate's original check, ...) is the local oracle's."""
from __future__ import annotations

import atexit
import os

from oracles.counters import Counters
from oracles.verdict import Candidate

_WORKER_ORACLES: dict = {}  # (builder, kind, settings) -> the oracle this worker process built


def candidate_of(item) -> Candidate:
    """What the verdict cache knows an item by: a candidate, or a crate splice's candidate."""
    return item if isinstance(item, Candidate) else item.splice.candidate()


def shard_of(item) -> str:
    """Items of one shard go to a worker together (a crate's scratch copy is made once per worker)."""
    return "" if isinstance(item, Candidate) else item.splice.crate_dir


def check_on_worker(build, kind: str, settings, items: list, per_item: dict,
                    together: bool = False) -> tuple[list, Counters, int]:
    """Runs on a worker: (verdicts in order, what the check added to the counters, worker pid);
    `together`: the items are one group the driver made (a crate oracle's `groups`), checked as it."""
    key = (build.__module__, build.__qualname__, kind, settings.model_dump_json())
    if key not in _WORKER_ORACLES:
        if not _WORKER_ORACLES:  # the worker's crate copies go when it exits (a killed worker's: the next run's sweep)
            atexit.register(close_worker_oracles)
        _WORKER_ORACLES[key] = build(kind, settings, None)
    oracle = _WORKER_ORACLES[key]
    before = oracle.stats.snapshot()
    verdicts = oracle.check_together(items) if together else oracle.check(items, **per_item)
    return verdicts, oracle.stats - before, os.getpid()


def close_worker_oracles() -> None:
    """Close what this worker built (a crate oracle's scratch copies of crates)."""
    for oracle in _WORKER_ORACLES.values():
        if hasattr(oracle, "close"):
            oracle.close()
    _WORKER_ORACLES.clear()


def by_copy(jobs: list) -> dict:
    """A crate oracle's jobs by the scratch copy they are checked in, in order."""
    out: dict = {}
    for i, job in enumerate(jobs):
        out.setdefault(job.splice.copy, []).append(i)
    return out


def batches(indices: list[int], items: list, size: int) -> list[list[int]]:
    """Consecutive runs of one shard, at most `size` long."""
    out: list[list[int]] = []
    for i in indices:
        if out and len(out[-1]) < size and shard_of(items[out[-1][-1]]) == shard_of(items[i]):
            out[-1].append(i)
        else:
            out.append([i])
    return out


class FarmOracle:
    def __init__(self, local, build, settings, cluster, batch_size: int = 128):
        # a worker builds its own copy by the local oracle's kind, which is its id
        self.local, self.build, self.kind, self.settings = local, build, local.id, settings
        self.cluster, self.batch_size = cluster, batch_size
        self.worker_pids: set[int] = set()
        self.tasks = 0

    def __getattr__(self, name):
        return getattr(self.local, name)

    def check(self, items: list, **per_item) -> list:
        """One verdict per item, in order; `per_item` lists (e.g. `expect_pass`) follow their items."""
        if hasattr(self.local, "plan_check"):  # a crate's jobs: in the groups a local check makes
            return self._check_groups(items)
        cache = self.local.cache
        verdicts = {}
        for i, item in enumerate(items):
            hit = cache.lookup(self.local, candidate_of(item)) if cache is not None else None
            if hit is not None:
                verdicts[i] = hit
        todo = sorted((i for i in range(len(items)) if i not in verdicts), key=lambda i: (shard_of(items[i]), i))
        groups = batches(todo, items, self.batch_size)
        calls = [(self.build, self.kind, self.settings, [items[i] for i in g],
                  {name: [values[i] for i in g] for name, values in per_item.items() if values is not None})
                 for g in groups]
        for group, (found, delta, pid) in zip(groups, self.cluster.map(check_on_worker, calls)):
            self.local.stats += delta
            self.worker_pids.add(pid)
            for i, verdict in zip(group, found):
                verdicts[i] = verdict
                if cache is not None:
                    cache.store(self.local, candidate_of(items[i]), verdict)
        self.tasks += len(groups)
        return [verdicts[i] for i in range(len(items))]

    def _check_groups(self, jobs: list) -> list:
        """A crate oracle's check, its groups (made as the local oracle makes them) one task each."""
        known, same_as, by_copy = self.local.plan_check(jobs)
        verdicts = dict(known)
        groups = [group for copy, indices in by_copy.items()
                  for group in self.local.groups(copy, indices, jobs) if not set(known).issuperset(group)]
        calls = [(self.build, self.kind, self.settings, [jobs[i] for i in g], {}, True) for g in groups]
        for group, (found, delta, pid) in zip(groups, self.cluster.map(check_on_worker, calls)):
            self.local.stats += delta
            self.worker_pids.add(pid)
            verdicts.update(self.local.kept(dict(zip(group, found)), known, jobs))
        self.tasks += len(groups)
        return self.local.answered(jobs, verdicts, same_as)
