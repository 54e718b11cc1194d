"""What an oracle counts (compiler runs, candidates, batches, reasons for checking alone...): one
type whose values subtract (what one check added) and add (merged back into the driver's own, as
a cluster's workers do), numbers and per-reason counts alike."""
from __future__ import annotations

import copy
import dataclasses


@dataclasses.dataclass
class Counters:
    # what every oracle counts: the verdict cache adds its hits, a run sums the others
    compiler_runs: int = 0
    candidates_compiled: int = 0  # candidates not answered by the cache (the compiler's work)
    cache_hits: int = 0

    def snapshot(self) -> "Counters":
        return copy.deepcopy(self)

    def __sub__(self, before: "Counters") -> "Counters":
        delta = type(self)()
        for f in dataclasses.fields(self):
            now, was = getattr(self, f.name), getattr(before, f.name)
            if isinstance(now, dict):
                setattr(delta, f.name, {k: v - was.get(k, 0) for k, v in now.items() if v != was.get(k, 0)})
            else:
                setattr(delta, f.name, now - was)
        return delta

    def __iadd__(self, delta: "Counters") -> "Counters":
        for f in dataclasses.fields(self):
            mine, more = getattr(self, f.name), getattr(delta, f.name)
            if isinstance(mine, dict):
                for k, v in more.items():
                    mine[k] = mine.get(k, 0) + v
            else:
                setattr(self, f.name, mine + more)
        return self
