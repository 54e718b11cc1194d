"""One request to a model, as the client, the batch runner and the plans see it. Its key decides
cache hits: it covers the provider, model, full messages, every parameter and the template hash."""
from __future__ import annotations

from dataclasses import dataclass

from .response_cache import request_key


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
