"""The Ray executor: oracle checks as farms of batches on the cluster's workers
(synth/executor/farm.py), model calls' provider round trips on workers (`RemoteSender`), every
node's toolchain asked before it gets work. The driver keeps the caches, the ledger and the rows."""
from __future__ import annotations

from synth.llm.request import CallFailed, LLMRequest, WorkerLost

from .cluster import RayCluster
from .farm import FarmOracle


class RayExecutor:
    def __init__(self, address: str | None = None, batch_size: int = 128, build=None):
        self.cluster = RayCluster(address)
        self.batch_size = batch_size
        self.build = build  # build_oracle (oracles/factory.py): how a worker builds its own copy of an oracle
        self.checked: set = set()  # probes every node has passed
        self.senders: list = []  # the LLM clients' remote senders

    def oracle(self, oracle, settings):
        """A farm of `oracle` (each worker's built by its kind, which is its id), once every node
        has shown the toolchain its verdicts depend on."""
        if oracle is None:
            return None
        key, *args = oracle.toolchain_probe  # its [oracles] key, and what prints its version
        probe = (getattr(settings, key), *args)
        if probe not in self.checked:
            self.cluster.check_toolchain(list(probe))
            self.checked.add(probe)
        return FarmOracle(oracle, self.build, settings, self.cluster, self.batch_size)

    def sender(self, retry, call_on_worker):
        """Calls sent from workers: `call_on_worker(request, retry)` runs there (synth/llm/client.py)."""
        self.senders.append(RemoteSender(self.cluster, retry, call_on_worker))
        return self.senders[-1]

    def stats(self, oracles: list) -> dict:
        farms = [o for o in oracles if isinstance(getattr(o, "worker_pids", None), set)]
        return {"executor": "ray", "nodes": len(self.cluster.nodes()), "oracle_tasks": sum(o.tasks for o in farms),
                "llm_calls": sum(s.calls for s in self.senders),
                "worker_processes": len(set().union(*(o.worker_pids for o in [*farms, *self.senders])))}

    def close(self) -> None:
        self.cluster.close()


class RemoteSender:
    """`LLMClient(send=RemoteSender(cluster, retry, send_on_worker))`: each call's provider round
    trip on a worker."""

    def __init__(self, cluster, retry, call_on_worker):
        self.cluster, self.retry, self.call_on_worker = cluster, retry, call_on_worker
        self.worker_pids: set[int] = set()
        self.calls = 0

    def __call__(self, req: LLMRequest):
        try:
            # Not retried by Ray: the driver's client decides, since the lost call may have been charged.
            status, value, extra, pid = self.cluster.call(self.call_on_worker, req, self.retry, retries=0)
        except self.cluster.lost_errors as exc:
            raise WorkerLost(f"the worker making this call died: {type(exc).__name__}") from exc
        self.worker_pids.add(pid)
        self.calls += 1
        if status == "failed":
            raise CallFailed(value, extra)
        return value, extra
