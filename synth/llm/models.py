"""The one model settings type: which provider and model a stage calls, and how. Config files
validate into it, engines take it, fingerprints print it."""
from __future__ import annotations

from pydantic import ConfigDict, Field

from synth.prompts import template_hash
from synth.strict import Strict

from .request import LLMRequest


class ModelSettings(Strict):
    model_config = ConfigDict(frozen=True)  # hashable: a dict key, a fingerprint part

    provider: str  # a registered provider name (synth.llm.providers.names(); the config checks it)
    model: str
    base_url: str | None = None  # else the SDK's own variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, ...)
    max_tokens: int = Field(600, gt=0)
    temperature: float | None = None
    free: bool = False  # a local server: costs nothing, needs no price

    def request(self, prompt: str, template_name: str) -> LLMRequest:
        """One user message rendered from the prompt template `template_name`."""
        return LLMRequest(self.provider, self.model, ({"role": "user", "content": prompt},),
                          max_tokens=self.max_tokens, temperature=self.temperature, base_url=self.base_url,
                          free=self.free, template_hash=template_hash(template_name))

    def fingerprint(self) -> str:
        """Everything a call's answer depends on, as stable text. It is the text the former
        ModelSpec printed, so stores fingerprinted before this type keep their fingerprints."""
        return (f"ModelSpec(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r}, "
                f"max_tokens={self.max_tokens!r}, temperature={self.temperature!r}, free={self.free!r})")

    def __str__(self) -> str:
        return self.fingerprint()
