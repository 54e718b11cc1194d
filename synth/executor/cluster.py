"""The Ray executor: where the work that dominates a run (compiler checks, model calls) goes when
one machine is not enough. The driver keeps the item store, the verdict cache, the ledger and the
rows; workers get plain functions and arguments and return results, gathered in submission order,
so the outputs are the same bytes as a local run's. A task whose worker (or node) dies is retried
by Ray (`RETRIES`); the driver's records decide what was paid, so a retry never pays twice for an
answer already stored.

Ray is an optional extra (`pip install '.[ray]'`): asking for it without Ray installed is a
`ClusterError` that says so."""
from __future__ import annotations

import os
import subprocess

from oracles.errors import SynthError

RETRIES = 3  # attempts after a worker dies mid-task


class ClusterError(SynthError, RuntimeError):
    """No Ray, no cluster at the address, or a node unlike this one: exit 2."""
    exit_code = 2


def _ray():
    try:
        import ray
    except ImportError:
        raise ClusterError("executor 'ray' needs Ray: pip install '.[ray]' (or use the default executor 'local')") from None
    return ray


def _toolchain_probe(command: list[str]) -> tuple[str, str]:
    """(host, what `command` prints) on the worker that runs it."""
    try:
        printed = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip()
    except OSError as exc:
        printed = f"not runnable: {exc}"
    return os.uname().nodename, printed


def _reachable(address: str | None) -> None:
    """A HOST:PORT nobody listens at is said at once (Ray itself would wait on it for minutes)."""
    import socket
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=10).close()
    except (OSError, ValueError) as exc:
        raise ClusterError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from None


class RayCluster:
    """A connection to a Ray cluster: `address` (e.g. "ray://head:10001" or "auto"), or None for a
    local one started here (and stopped by `close`); an already connected process reuses its own."""

    def __init__(self, address: str | None = None):
        ray = _ray()
        self._ray = ray
        self.started = False
        if not ray.is_initialized():
            _reachable(address)
            try:
                if address:
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(include_dashboard=False, log_to_driver=False)
            except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
                raise ClusterError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from None
            self.started = True
        self._remote: dict = {}

    def remote(self, fn, retries: int = RETRIES):
        if (fn, retries) not in self._remote:
            self._remote[fn, retries] = self._ray.remote(max_retries=retries, retry_exceptions=False)(fn)
        return self._remote[fn, retries]

    @property
    def lost_errors(self) -> tuple:
        """What a task whose worker or node died raises (its work is unknown: maybe done)."""
        from ray import exceptions
        return (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.ObjectLostError)

    def map(self, fn, calls: list[tuple]) -> list:
        """fn(*args) for each args of `calls`, on the cluster; results in the order of `calls`."""
        task = self.remote(fn)
        return self._ray.get([task.remote(*args) for args in calls])

    def call(self, fn, *args, retries: int = RETRIES):
        return self._ray.get(self.remote(fn, retries).remote(*args))

    def cpus(self) -> int:
        return int(self._ray.cluster_resources().get("CPU", 1))

    def nodes(self) -> list[str]:
        return sorted(n["NodeID"] for n in self._ray.nodes() if n.get("Alive"))

    def check_toolchain(self, command: list[str]) -> str:
        """What `command` (e.g. `rustc -vV`) prints here; ClusterError naming every node where it
        prints something else (a verdict depends on the toolchain, so such a node is refused)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        here = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip()
        probe = self._ray.remote(num_cpus=0)(_toolchain_probe)
        refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(command)
                for node in self.nodes()]
        differing = [(host, printed) for host, printed in self._ray.get(refs) if printed != here]
        if differing:
            lines = "; ".join(f"{host}: {printed.splitlines()[0] if printed else 'nothing'}" for host, printed in differing)
            raise ClusterError(f"workers with another toolchain than the driver's ({here.splitlines()[0]}): {lines}. "
                               "Install the same toolchain on every node (a verdict depends on it).")
        return here

    def close(self) -> None:
        if self.started:
            self._ray.shutdown()
            self.started = False
