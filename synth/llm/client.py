"""One call to a model, the only way synth spends money: cache, reserve, call, settle.

Providers are the official SDKs (`openai`, also for any OpenAI-compatible server, and
`anthropic`), with their own retries off: retries here honour `Retry-After`, back off with
jitter, are bounded, and never pay twice (a request is sent again only after a failure the
provider does not charge for, and the answer is cached before it is settled).
Keys come only from OPENAI_API_KEY / ANTHROPIC_API_KEY; base URLs from the request or the SDKs'
OPENAI_BASE_URL / ANTHROPIC_BASE_URL.
"""
from __future__ import annotations

import inspect
import os
import random
import time
from dataclasses import dataclass, field

import anthropic
import openai

from .ledger import Ledger
from .prices import PriceTable
from .response_cache import ResponseCache, request_key
from .tokens import count_messages


class BudgetExceeded(RuntimeError):
    """The call's worst case does not fit under the cap: it was not made."""


class CallFailed(RuntimeError):
    """Every attempt failed; the cause is the last error."""


class KeyMissing(RuntimeError):
    pass


@dataclass(frozen=True)
class LLMRequest:
    provider: str  # openai | anthropic
    model: str
    messages: tuple  # ({"role", "content"}, ...)
    max_tokens: int = 512
    temperature: float | None = None  # None: the provider's default
    seed: int | None = None
    n: int = 1
    template_hash: str = ""
    base_url: str | None = None
    free: bool = False  # a local server: no price needed, costs 0

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed, "n": self.n,
                "base_url": self.base_url or ""}

    def key(self, sample: int = 0) -> str:
        base = request_key(self.provider, self.model, list(self.messages), self.params(), self.template_hash)
        return base if sample == 0 else f"{base}#{sample}"


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


def _transient(exc) -> tuple[bool, bool]:
    """(retry?, certainly not charged?) for an SDK error."""
    if isinstance(exc, UnsupportedParameter):
        return False, True
    status = getattr(exc, "status_code", None)
    if isinstance(exc, (openai.RateLimitError, anthropic.RateLimitError)) or status == 429:
        return True, True
    if status is not None and status >= 500:
        return True, True
    if isinstance(exc, (openai.APITimeoutError, anthropic.APITimeoutError)):
        return True, False  # the server may have done (and billed) the work
    if isinstance(exc, (openai.APIConnectionError, anthropic.APIConnectionError)):
        return True, False
    return False, True


class UnsupportedParameter(ValueError):
    """The installed SDK no longer accepts a parameter the request sets: refused, never dropped."""


def _supported(method, kwargs: dict) -> dict:
    """Drop only unset parameters; a set one the installed SDK does not accept is an error."""
    accepted = inspect.signature(method).parameters
    out = {}
    for name, value in kwargs.items():
        if value is None:
            continue
        if name not in accepted:
            raise UnsupportedParameter(f"{getattr(method, '__qualname__', method)} (installed SDK) does not accept "
                                       f"`{name}`; remove it from the stage's model settings")
        out[name] = value
    return out


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
        keys = [req.key(i) for i in range(req.n)]
        with self.cache.lock(keys[0], expire=self.retry.timeout_s * self.retry.attempts):
            cached = [self.cache.get(k) for k in keys]
            if all(cached):
                self.stats.cache_hits += 1
                return LLMResponse([c["text"] for c in cached], 0, 0, 0.0, True, keys[0])
            price = self.prices.price(req.model, free=req.free)
            self._client(req.provider, req.base_url, req.free)  # a missing key fails here, before any reservation
            worst = price.cost(count_messages(list(req.messages), req.model, req.provider), req.max_tokens * req.n)
            reservation = self.ledger.reserve(keys[0], worst)
            if reservation is None:
                self.stats.refused_by_budget += 1
                raise BudgetExceeded(f"call needs up to ${worst:.6f}; ${self.ledger.remaining_usd():.6f} left under "
                                     f"the ${self.ledger.cap_usd:.2f} cap")
            try:
                texts, usage_in, usage_out, cached_in = self._call(req)
            except CallFailed as exc:
                (self.ledger.release if exc.args[1] else self.ledger.mark_lost)(reservation, str(exc.args[0])[:300])
                self.stats.failures.append({"key": keys[0], "cause": str(exc.args[0])[:300]})
                raise
            cost = price.cost(usage_in, usage_out, cached_in)
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

    # -- providers -----------------------------------------------------------------------------

    def _client(self, provider: str, base_url: str | None, free: bool):
        cache_key = (provider, base_url)
        if cache_key not in self._sdk:
            env = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
            key = os.environ.get(env)
            if not key:
                if not free:
                    raise KeyMissing(f"{env} is not set (keys come only from the environment)")
                key = "local-server-needs-no-key"
            common = {"api_key": key, "max_retries": 0, "timeout": self.retry.timeout_s}
            if base_url:
                common["base_url"] = base_url
            self._sdk[cache_key] = (openai.OpenAI(**common) if provider == "openai" else anthropic.Anthropic(**common))
        return self._sdk[cache_key]

    def _call(self, req: LLMRequest):
        last, free_of_charge = None, True
        for attempt in range(self.retry.attempts):
            try:
                return self._once(req)
            except Exception as exc:  # noqa: BLE001 - classified below
                retry, not_charged = _transient(exc)
                last, free_of_charge = exc, free_of_charge and not_charged
                if not retry or attempt == self.retry.attempts - 1:
                    break
                self.stats.retries += 1
                wait = _retry_after(exc)
                if wait is None:
                    wait = min(self.retry.max_s, self.retry.base_s * 2 ** attempt) * (0.5 + self._rng.random())
                time.sleep(min(wait, self.retry.max_s))
        raise CallFailed(f"{type(last).__name__}: {last}", free_of_charge)

    def _once(self, req: LLMRequest):
        client = self._client(req.provider, req.base_url, req.free)
        messages = list(req.messages)
        if req.provider == "openai":
            kwargs = {"model": req.model, "messages": messages, "max_tokens": req.max_tokens, "n": req.n,
                      "temperature": req.temperature, "seed": req.seed}
            resp = client.chat.completions.create(**_supported(client.chat.completions.create, kwargs))
            usage = resp.usage
            cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
            return [c.message.content or "" for c in resp.choices], usage.prompt_tokens, usage.completion_tokens, cached
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [m for m in messages if m["role"] != "system"]
        texts, tin, tout, cached = [], 0, 0, 0
        for _ in range(req.n):  # the Messages API has no n
            kwargs = {"model": req.model, "messages": turns, "max_tokens": req.max_tokens,
                      "temperature": req.temperature, "system": system or None}
            resp = client.messages.create(**_supported(client.messages.create, kwargs))
            texts.append("".join(block.text for block in resp.content if getattr(block, "type", "") == "text"))
            tin += resp.usage.input_tokens
            tout += resp.usage.output_tokens
            cached += getattr(resp.usage, "cache_read_input_tokens", 0) or 0
        return texts, tin, tout, cached
