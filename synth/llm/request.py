"""One request to a model, as the client, the batch runner and the plans see it. Its key decides
cache hits: it covers the provider, model, full messages, every parameter and the template hash."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from oracles.errors import SynthError


class BudgetExceeded(SynthError, RuntimeError):
    """The call's worst case does not fit under the cap: it was not made."""


class CallFailed(SynthError, RuntimeError):
    """Every attempt failed; the cause is the last error."""


class WorkerLost(SynthError, RuntimeError):
    """The cluster worker making a call died before it answered: the call may have been charged."""


class KeyMissing(SynthError, RuntimeError):
    exit_code = 2


def request_key(provider: str, model: str, messages: list[dict], params: dict, template_hash: str = "") -> str:
    payload = json.dumps({"provider": provider, "model": model, "messages": messages, "params": params,
                          "template": template_hash}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class LLMRequest:
    provider: str  # a registered provider name (synth.llm.providers)
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
