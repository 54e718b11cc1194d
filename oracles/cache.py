"""Verdict cache on disk (diskcache). The key covers everything a verdict depends on:
candidate text, its context fingerprint, oracle id, toolchain version and flags."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import diskcache

from .isolation.starved import EAGAIN_TEXT
from .verdict import EXIT_ONLY, Candidate, Verdict

# Bump when the way verdicts are computed changes meaning (attribution, flags, parsing).
# 2: batched labels were read from the raw span (`Vec<__synth_c1::Token>` for `Vec<Token>`).
# 3: diagnostics in file order; configured-out notes, neighbours' names and closure places.
# 4: a suggestion already in its help message (or introduced by a trailing ":") is not repeated.
# 4: "`#[warn(x)]` implied by `#[warn(warnings)]`" is order-dependent too (found in crate batches).
# 5: crate batches: an impl's method signatures are its header; errors elsewhere given to the one new signature named there.
# 6: diagnostics carry rustc's suggestions with their places (Diagnostic.fixes).
CACHE_LOGIC_VERSION = "6"
REDONE = ("count", "verdicts compiled again")  # a stored verdict computed once more: work a resume must not redo


def lasting(directory: str | Path) -> diskcache.Cache:
    """A diskcache that keeps every entry. diskcache's default culls the oldest entries once the
    cache passes 1 GiB, silently: a night's item store lost whole crates' rows that way, and an
    evicted verdict or paid answer is computed or paid for again. The policy is stored with the
    cache, so opening an older one here turns its culling off too."""
    return diskcache.Cache(str(directory), eviction_policy="none")


def starved(verdict: Verdict) -> bool:
    """A verdict that only says the machine could not start the compiler: stored by a synth that
    took it for an answer (isolation/starved.py), it is computed again."""
    return any(d.code in EXIT_ONLY and EAGAIN_TEXT in d.message for d in verdict.diagnostics)


def verdict_key(candidate: Candidate, oracle: str, toolchain: str, flags: dict) -> str:
    payload = json.dumps({
        "v": CACHE_LOGIC_VERSION, "oracle": oracle, "toolchain": toolchain, "flags": flags,
        "text": candidate.text, "context": candidate.context_fingerprint,
    }, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class VerdictCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._cache = lasting(self.directory)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Verdict | None:
        raw = self._cache.get(key)
        verdict = None if raw is None else Verdict.model_validate_json(raw)
        if verdict is None or starved(verdict):
            self.misses += 1
            return None
        self.hits += 1
        return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.timed_out:  # a timeout says as much about the machine's load as about the code
            return
        if key in self._cache:
            self._cache.incr(REDONE)
        self._cache.set(key, verdict.model_dump_json())

    def count_redone(self, n: int) -> None:
        """`n` stored verdicts compiled again without being stored again (checked in their group)."""
        self._cache.incr(REDONE, n)

    def transaction(self):
        """Stores made inside are written together (a kill leaves all of them or none)."""
        return self._cache.transact()

    def redone(self) -> int:
        """How many verdicts were compiled although the cache held them, over every run that used
        it (counted on disk, so a run killed by SIGKILL counts too)."""
        return int(self._cache.get(REDONE, 0))

    def lookup(self, oracle, cand: Candidate, kind: str = "check") -> Verdict | None:
        """`oracle`'s stored verdict of `kind` (check, test, run) for `cand`, as `cand`'s own;
        counted in the oracle's stats where it keeps them."""
        hit = self.get(verdict_key(cand, f"{oracle.id}:{kind}", oracle.toolchain, oracle.flags))
        if hit is None:
            return None
        if getattr(oracle, "stats", None) is not None:
            oracle.stats.cache_hits += 1
        return hit.model_copy(update={"candidate_id": cand.id, "mode": "cache"})

    def store(self, oracle, cand: Candidate, verdict: Verdict, kind: str = "check") -> None:
        if verdict.mode != "cache":
            self.put(verdict_key(cand, f"{oracle.id}:{kind}", oracle.toolchain, oracle.flags), verdict)

    def memo(self, key: str, compute):
        """A small value (e.g. a toolchain probe) computed once per key."""
        value = self._cache.get(("memo", key))
        if value is None:
            value = compute()
            self._cache.set(("memo", key), value)
        return value

    def close(self) -> None:
        self._cache.close()


def cached_verdict(cache: VerdictCache | None, oracle, cand: Candidate, kind: str, compute) -> Verdict:
    """The stored verdict, else `compute(cand)`, stored (the one way every oracle uses the cache)."""
    hit = cache.lookup(oracle, cand, kind) if cache is not None else None
    if hit is not None:
        return hit
    verdict = compute(cand)
    if cache is not None:
        cache.store(oracle, cand, verdict, kind)
    return verdict
