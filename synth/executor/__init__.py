"""Where a run's heavy work executes: `local` (this process and its pools, the default) or `ray`
(a Ray cluster: oracle batches and model calls on its workers; synth/executor/ray.py). `run`,
`refresh` and `mutate` open one with `opened` and hand it their oracles and client; nothing else
changes, so both executors write the same bytes."""
from __future__ import annotations

from contextlib import contextmanager

from .local import LocalExecutor


def open_executor(kind: str = "local", address: str | None = None, batch_size: int = 128, build=None):
    if kind == "local":
        return LocalExecutor()
    if kind != "ray":
        raise ValueError(f"unknown executor {kind!r} (known: local, ray)")
    from .ray import RayExecutor
    return RayExecutor(address, batch_size, build)


@contextmanager
def opened(kind: str = "local", address: str | None = None, batch_size: int = 128, build=None):
    """An executor for the length of a command (a local Ray instance it started is stopped after)."""
    executor = open_executor(kind, address, batch_size, build)
    try:
        yield executor
    finally:
        executor.close()
