"""The peak resident memory of a process and everything it started, sampled from /proc (the
extract and night benches measure a `synth` subprocess's tree with it)."""
from __future__ import annotations

import os
import threading
from pathlib import Path


class PeakRss:
    """The largest sum of resident memory of a process and its descendants, sampled."""

    def __init__(self, pid: int, every_s: float = 0.02):
        self.pid, self.every_s, self.peak = pid, every_s, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._done.is_set():
            self.peak = max(self.peak, sum(_resident_pages(pid) for pid in _tree(self.pid)) * page)
            self._done.wait(self.every_s)


def _tree(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def _resident_pages(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
