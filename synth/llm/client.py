"""One call to a model, the only way synth spends money: cache, reserve, call, settle.

Providers come from the registry (synth.llm.providers: the official SDKs, with their own retries
off): retries here honour `Retry-After`, back off with jitter, are bounded, and never pay twice (a
request is sent again only after a failure the provider does not charge for, and the answer is
cached before it is settled). A provider's key comes only from its own environment variable
(`Provider.key_env`); base URLs from the request or the SDK's own variable.
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from .ledger import Ledger
from .prices import PriceTable
from .providers import UnsupportedParameter, provider
from .request import BudgetExceeded, CallFailed, KeyMissing, LLMRequest  # noqa: F401 - the client raises them
from .response_cache import ResponseCache

__all__ = ["BudgetExceeded", "CallFailed", "KeyMissing", "LLMClient", "LLMRequest", "LLMResponse", "RetryPolicy",
           "UnsupportedParameter"]


@dataclass
class LLMResponse:
    texts: list[str]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached: bool
    key: str


@dataclass
class RetryPolicy:
    attempts: int = 6
    base_s: float = 0.5
    max_s: float = 30.0
    timeout_s: float = 120.0


@dataclass
class ClientStats:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    refused_by_budget: int = 0
    failures: list = field(default_factory=list)


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


class LLMClient:
    def __init__(self, ledger: Ledger, cache: ResponseCache, prices: PriceTable | None = None,
                 retry: RetryPolicy | None = None, seed: int = 0):
        self.ledger, self.cache = ledger, cache
        self.prices = prices or PriceTable()
        self.retry = retry or RetryPolicy()
        self.stats = ClientStats()
        self._rng = random.Random(seed)
        self._sdk: dict = {}

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
            self._client(req.provider, req.base_url, req.free)  # a missing key fails here, before any reservation
            worst = price.cost(provider(req.provider).count_messages(list(req.messages), req.model), req.max_tokens * req.n)
            reservation = self.ledger.reserve(keys[0], worst)
            if reservation is None:
                self.stats.refused_by_budget += 1
                raise BudgetExceeded(f"call needs up to ${worst:.6f}; ${self.ledger.remaining_usd():.6f} left under "
                                     f"the ${self.ledger.cap_usd:.2f} cap")
            try:
                done = self._call(req)
            except CallFailed as exc:
                (self.ledger.release if exc.args[1] else self.ledger.mark_lost)(reservation, str(exc.args[0])[:300])
                self.stats.failures.append({"key": keys[0], "cause": str(exc.args[0])[:300]})
                raise
            texts, usage_in, usage_out = done.texts, done.input_tokens, done.output_tokens
            cost = price.cost(usage_in, usage_out, done.cached_tokens)
            for i, (k, text) in enumerate(zip(keys, texts)):  # cached before settled: a crash here re-pays nothing
                self.cache.put(k, {"text": text, "input_tokens": usage_in if i == 0 else 0,
                                   "output_tokens": usage_out if i == 0 else 0, "cost_usd": cost if i == 0 else 0.0})
            self.ledger.settle(reservation, cost, usage_in, usage_out)
            self.cache.record_output(req.model, req.template_hash, usage_out // max(1, req.n))
            self.stats.calls += 1
            return LLMResponse(texts, usage_in, usage_out, cost, False, keys[0])

    def recover(self) -> dict:
        """After a crash: settle what was answered (it is in the cache), count the rest as lost."""
        def answered(key):
            hit = self.cache.get(key)
            return None if hit is None else (hit["cost_usd"], hit["input_tokens"], hit["output_tokens"])
        return self.ledger.recover(answered)

    # -- providers ---------------------------------------------------------------------------------

    def _client(self, provider_name: str, base_url: str | None, free: bool):
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

    def _call(self, req: LLMRequest):
        chosen = provider(req.provider)
        last, free_of_charge = None, True
        for attempt in range(self.retry.attempts):
            try:
                return chosen.complete(self._client(req.provider, req.base_url, req.free), req)
            except Exception as exc:  # noqa: BLE001 - classified below
                retry, not_charged = _transient(req, exc)
                last, free_of_charge = exc, free_of_charge and not_charged
                if not retry or attempt == self.retry.attempts - 1:
                    break
                self.stats.retries += 1
                wait = _retry_after(exc)
                if wait is None:
                    wait = min(self.retry.max_s, self.retry.base_s * 2 ** attempt) * (0.5 + self._rng.random())
                time.sleep(min(wait, self.retry.max_s))
        raise CallFailed(f"{type(last).__name__}: {last}", free_of_charge)
