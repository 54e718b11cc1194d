"""Crates checked side by side, their Python work in turns.

Checking a crate is mostly the compiler's time, in a process of its own; the oracle's own work
(batching, reading diagnostics, counting) is short and keeps shared state. So each crate's checks
run in a thread that holds the turn while it works and gives it up only while a compiler runs:
two crates' compilers overlap, and no two threads ever touch the oracle's state at once.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


class Turns:
    def __init__(self):
        self._lock = threading.Lock()
        self._mine = threading.local()

    @contextmanager
    def turn(self):
        with self._lock:
            self._mine.held = True
            try:
                yield
            finally:
                self._mine.held = False

    @contextmanager
    def compiling(self):
        """Give up the turn (if this thread holds it) while a compiler runs."""
        held = getattr(self._mine, "held", False)
        if held:
            self._mine.held = False
            self._lock.release()
        try:
            yield
        finally:
            if held:
                self._lock.acquire()
                self._mine.held = True

    def map(self, work, items: list, workers: int) -> list:
        """`work(item)` for each item, in order, `workers` at a time, each in its turn."""
        def in_turn(item):
            with self.turn():
                return work(item)
        if workers <= 1 or len(items) <= 1:
            return [in_turn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            return list(pool.map(in_turn, items))
