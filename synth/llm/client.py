"""One call to a model, the only way synth spends money: cache, reserve, call, settle.

Providers come from the registry (synth.llm.providers: the official SDKs, with their own retries
off): retries (`Caller`) honour `Retry-After`, back off with jitter, are bounded, and never pay twice (a
request is sent again only after a failure the provider does not charge for, and the answer is
cached before it is settled). A provider's key comes only from its own environment variable
(`Provider.key_env`); base URLs from the request or the SDK's own variable.

Where the provider is called is the one part that can move: `Caller` sends a request here, and on
a cluster a worker sends it (synth/executor/ray.py) (the worker's key from its own environment), while
the response cache and the one ledger every reservation is made in stay with the driver's
`LLMClient`, so no number of workers or nodes can cross the cap.
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from synth.llm.cost.ledger import Ledger
from synth.llm.cost.prices import PriceTable
from synth.llm.providers import UnsupportedParameter, provider
from synth.llm.request import BudgetExceeded, CallFailed, KeyMissing, LLMRequest, WorkerLost  # noqa: F401 - raised here
from synth.llm.response_cache import ResponseCache

__all__ = ["BudgetExceeded", "CallFailed", "KeyMissing", "LLMClient", "LLMRequest", "LLMResponse", 
           "RetryPolicy", "UnsupportedParameter"]


@dataclass
class RetryPolicy:
    attempts: int = 6
    base_s: float = 0.5
    max_s: float = 30.0
    timeout_s: float = 120.0


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _transient(req: LLMRequest, exc) -> tuple[bool, bool]:
    """(retry?, certainly not charged?) for an error of the request's provider."""
    if isinstance(exc, UnsupportedParameter):
        return False, True
    return provider(req.provider).transient(exc)


class Caller:
    """One provider call with retries."""

    def __init__(self, retry: RetryPolicy | None = None, seed: int = 0):
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._sdk: dict = {}

    def sdk(self, provider_name: str, base_url: str | None, free: bool):
        """The provider's SDK client (one per provider and base URL); its key from the environment only."""
        cache_key = (provider_name, base_url)
        if cache_key not in self._sdk:
            chosen = provider(provider_name)
            key = os.environ.get(chosen.key_env)
            if not key:
                if not free:
                    raise KeyMissing(f"{chosen.key_env} is not set (keys come only from the environment)")
                key = "local-server-needs-no-key"
            self._sdk[cache_key] = chosen.sdk(key, base_url, self.retry.timeout_s)
        return self._sdk[cache_key]

    def call(self, req: LLMRequest):
        """(the provider's answer, retries made); CallFailed(cause, certainly-not-charged) after the
        last attempt."""
        chosen = provider(req.provider)
        last, free_of_charge = None, True
        for attempt in range(self.retry.attempts):
            try:
                return chosen.complete(self.sdk(req.provider, req.base_url, req.free), req), attempt
            except Exception as exc:  # noqa: BLE001 - classified below
                retry, not_charged = _transient(req, exc)
                last, free_of_charge = exc, free_of_charge and not_charged
                if not retry or attempt == self.retry.attempts - 1:
                    break
                wait = _retry_after(exc)
                if wait is None:
                    wait = min(self.retry.max_s, self.retry.base_s * 2 ** attempt) * (0.5 + self._rng.random())
                time.sleep(min(wait, self.retry.max_s))
        raise CallFailed(f"{type(last).__name__}: {last}", free_of_charge)


WORKER_LOST_RETRIES = 2  # a call whose cluster worker died is asked again, under a new reservation


@dataclass
class LLMResponse:
    texts: list[str]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached: bool
    key: str


@dataclass
class ClientStats:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    refused_by_budget: int = 0
    failures: list = field(default_factory=list)


class LLMClient:
    def __init__(self, ledger: Ledger, cache: ResponseCache, prices: PriceTable | None = None,
                 retry: RetryPolicy | None = None, seed: int = 0, send=None):
        """`send(req) -> (answer, retries)`: where the provider is called (default: here, in this
        process; a cluster sends it to a worker). Cache, reservation and settlement stay here."""
        self.ledger, self.cache = ledger, cache
        self.prices = prices or PriceTable()
        self.retry = retry or RetryPolicy()
        self.stats = ClientStats()
        self.caller = Caller(self.retry, seed)
        self.send = send or self.caller.call

    # -- public --------------------------------------------------------------------------------

    def complete(self, req: LLMRequest) -> LLMResponse:
        provider(req.provider)  # an unknown provider fails before anything else, cached answers included
        keys = [req.key(i) for i in range(req.n)]
        with self.cache.lock(keys[0], expire=self.retry.timeout_s * self.retry.attempts):
            cached = [self.cache.get(k) for k in keys]
            if all(cached):
                self.stats.cache_hits += 1
                return LLMResponse([c["text"] for c in cached], 0, 0, 0.0, True, keys[0])
            price = self.prices.price(req.model, free=req.free)
            self.caller.sdk(req.provider, req.base_url, req.free)  # a missing key fails here, before any reservation
            worst = price.cost(provider(req.provider).count_messages(list(req.messages), req.model), req.max_tokens * req.n)
            for attempt in range(1 + WORKER_LOST_RETRIES):
                reservation = self._reserve(keys[0], worst)
                try:
                    done, retries = self.send(req)
                    break
                except WorkerLost as exc:  # maybe answered and charged: kept at its worst case, asked again
                    self.ledger.mark_lost(reservation, str(exc)[:300])
                    if attempt == WORKER_LOST_RETRIES:
                        self.stats.failures.append({"key": keys[0], "cause": str(exc)[:300]})
                        raise CallFailed(str(exc), False) from exc
                except CallFailed as exc:
                    (self.ledger.release if exc.args[1] else self.ledger.mark_lost)(reservation, str(exc.args[0])[:300])
                    self.stats.failures.append({"key": keys[0], "cause": str(exc.args[0])[:300]})
                    raise
            self.stats.retries += retries
            texts, usage_in, usage_out = done.texts, done.input_tokens, done.output_tokens
            cost = price.cost(usage_in, usage_out, done.cached_tokens)
            for i, (k, text) in enumerate(zip(keys, texts)):  # cached before settled: a crash here re-pays nothing
                self.cache.put(k, {"text": text, "input_tokens": usage_in if i == 0 else 0,
                                   "output_tokens": usage_out if i == 0 else 0, "cost_usd": cost if i == 0 else 0.0})
            self.ledger.settle(reservation, cost, usage_in, usage_out)
            self.cache.record_output(req.model, req.template_hash, usage_out // max(1, req.n))
            self.stats.calls += 1
            return LLMResponse(texts, usage_in, usage_out, cost, False, keys[0])

    def _reserve(self, key: str, worst: float) -> int:
        reservation = self.ledger.reserve(key, worst)
        if reservation is None:
            self.stats.refused_by_budget += 1
            raise BudgetExceeded(f"call needs up to ${worst:.6f}; ${self.ledger.remaining_usd():.6f} left under "
                                 f"the ${self.ledger.cap_usd:.2f} cap")
        return reservation

    def recover(self) -> dict:
        """After a crash: settle what was answered (it is in the cache), count the rest as lost."""
        def answered(key):
            hit = self.cache.get(key)
            return None if hit is None else (hit["cost_usd"], hit["input_tokens"], hit["output_tokens"])
        return self.ledger.recover(answered)


# -- on a cluster -------------------------------------------------------------------------------


_CALLERS: dict = {}  # one Caller per worker process and retry policy (SDK clients are reused)


def send_on_worker(req: LLMRequest, retry: RetryPolicy) -> tuple:
    """Runs on a worker: ("ok", answer, retries, pid) or ("failed", cause, not charged, pid)."""
    caller = _CALLERS.setdefault(repr(retry), Caller(retry, seed=os.getpid()))
    try:
        answer, retries = caller.call(req)
    except CallFailed as exc:
        return "failed", exc.args[0], exc.args[1], os.getpid()
    except Exception as exc:  # noqa: BLE001 - e.g. the key is missing on that node: said, not retried
        return "failed", f"{type(exc).__name__} on a worker: {exc}", True, os.getpid()
    return "ok", answer, retries, os.getpid()
