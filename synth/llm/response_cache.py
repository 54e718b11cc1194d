"""Response cache (diskcache). The key covers what the answer depends on: provider, model, the
full messages, every parameter, and the prompt template's content hash. Samples of an n>1
request are cached one by one."""
from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import diskcache


from synth.llm.cost.ledger import _alive


class ResponseCache:
    def __init__(self, directory: str | Path):
        # every entry kept: diskcache culls past 1 GiB by default (see oracles/cache.py `lasting`)
        self.cache = diskcache.Cache(str(directory), eviction_policy="none")

    def get(self, key: str) -> dict | None:
        return self.cache.get(("response", key))

    def put(self, key: str, value: dict) -> None:
        self.cache.set(("response", key), value)

    def record_output(self, model: str, template_hash: str, output_tokens: int) -> None:
        """History of completion lengths per model and prompt template, for plans."""
        with self.cache.transact():
            count, total = self.cache.get(("history", model, template_hash), (0, 0))
            self.cache.set(("history", model, template_hash), (count + 1, total + output_tokens))

    def mean_output(self, model: str, template_hash: str) -> float | None:
        count, total = self.cache.get(("history", model, template_hash), (0, 0))
        return total / count if count else None

    @contextlib.contextmanager
    def lock(self, key: str, expire: float):
        """A lock on one request across threads and processes: the same key is never sent twice at
        once. A lock whose holder process died (a crash) is broken at once, not waited out."""
        name = ("lock", key)
        token = f"{os.getpid()}:{threading.get_ident()}:{time.monotonic_ns()}"
        while not self.cache.add(name, token, expire=expire):
            with self.cache.transact():
                holder = self.cache.get(name)
                if holder is not None and not _alive(int(holder.split(":")[0])):
                    self.cache.delete(name)
                    continue
            time.sleep(0.002)
        try:
            yield
        finally:
            with self.cache.transact():
                if self.cache.get(name) == token:
                    self.cache.delete(name)
