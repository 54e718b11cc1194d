"""Where a run's heavy work executes: `local` (this process and its pools, the default) or `ray`
(a Ray cluster: oracle batches and model calls on its workers; synth/cluster.py). `run`,
`refresh` and `mutate` open one with `opened` and hand it their oracles and client; nothing else
changes, so both executors write the same bytes."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

@dataclass
class Executor:
    cluster: object = None  # a RayCluster, or None: local
    batch_size: int = 128
    build: object = None  # build_oracle (oracles/factory.py): how a worker builds its own copy of an oracle
    checked: set = field(default_factory=set)  # probes every node has passed
    senders: list = field(default_factory=list)  # the LLM clients' remote senders

    def oracle(self, oracle, settings):
        """`oracle` as this executor runs it (on the cluster: a farm of the same oracle, each worker's
        built by its kind, which is its id)."""
        if self.cluster is None or oracle is None:
            return oracle
        from oracles.farm import FarmOracle
        key, *args = oracle.toolchain_probe  # its [oracles] key, and what prints its version
        probe = (getattr(settings, key), *args)
        if probe not in self.checked:
            self.cluster.check_toolchain(list(probe))
            self.checked.add(probe)
        return FarmOracle(oracle, self.build, oracle.id, settings, self.cluster, self.batch_size)

    def sender(self, retry):
        """Where an LLMClient sends its calls (None: from this process)."""
        if self.cluster is None:
            return None
        from synth.llm.client import RemoteSender
        self.senders.append(RemoteSender(self.cluster, retry))
        return self.senders[-1]

    def stats(self, oracles: list) -> dict:
        if self.cluster is None:
            return {"executor": "local"}
        farms = [o for o in oracles if isinstance(getattr(o, "worker_pids", None), set)]
        return {"executor": "ray", "nodes": len(self.cluster.nodes()), "oracle_tasks": sum(o.tasks for o in farms),
                "llm_calls": sum(s.calls for s in self.senders),
                "worker_processes": len(set().union(*(o.worker_pids for o in [*farms, *self.senders])))}

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


def open_executor(kind: str = "local", address: str | None = None, batch_size: int = 128, build=None) -> Executor:
    if kind == "local":
        return Executor()
    if kind != "ray":
        raise ValueError(f"unknown executor {kind!r} (known: local, ray)")
    from synth.cluster import RayCluster
    return Executor(RayCluster(address), batch_size, build)


@contextmanager
def opened(kind: str = "local", address: str | None = None, batch_size: int = 128, build=None):
    """An executor for the length of a command (a local Ray instance it started is stopped after)."""
    executor = open_executor(kind, address, batch_size, build)
    try:
        yield executor
    finally:
        executor.close()
