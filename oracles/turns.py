"""Crates checked side by side, their Python work in turns.

Checking a crate is mostly the compiler's time, in a process of its own; the oracle's own work
(batching, reading diagnostics, counting) is short and keeps shared state. So each crate's checks
run in a thread that holds the turn while it works and gives it up only while a compiler runs:
two crates' compilers overlap, and no two threads ever touch the oracle's state at once.

A night's crates differ a hundredfold in size: when only one crate's checks are left, `share`
lets the idle workers help with them (in copies of their own) instead of leaving cores idle.
"""
from __future__ import annotations

import threading
from collections import deque
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

    def share(self, crates: list, start, step, workers: int, help_from: int) -> None:
        """Each crate's tasks, `workers` at a time: a worker takes the next crate not yet taken,
        makes its tasks (`start(crate)`) and runs them (`step(crate, task, False)`); with no crate
        left to take, it helps the crate with the most tasks left, if at least `help_from`
        (`step(crate, task, True)`: a helper works in a copy of its own). Which worker runs a task,
        and when, varies: a step's result must not depend on it."""
        untaken, tasks, starting = deque(crates), {}, [0]
        started = threading.Condition(self._lock)  # waited on in the turn: waiting gives it up

        def work():
            with self.turn():
                while True:
                    if untaken:
                        crate, helping = untaken.popleft(), False
                        starting[0] += 1
                        try:
                            tasks[id(crate)] = (crate, deque(start(crate)))
                        finally:
                            starting[0] -= 1
                            started.notify_all()
                    else:
                        crate, left = max(tasks.values(), key=lambda t: len(t[1]), default=(None, ()))
                        if len(left) < max(1, help_from):
                            if starting[0]:  # a crate's tasks are being made: perhaps some to help with
                                started.wait()
                                continue
                            return
                        helping = True
                    left = tasks[id(crate)][1]
                    while left:  # a helper takes from the end, so the two rarely want the same next one
                        step(crate, left.pop() if helping else left.popleft(), helping)
        if workers <= 1:
            work()
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done in [pool.submit(work) for _ in range(workers)]:
                done.result()
