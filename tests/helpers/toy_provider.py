"""A third provider in one module, as a new one would be added: the loopback server's
OpenAI-compatible endpoint under its own name, its own key variable, the documented token
approximation (inherited), and no batch API. `calls` proves the client reached it by name."""
from __future__ import annotations

import os

import openai

from synth.llm.providers import Completion, Provider, classify_sdk_error, supported


class LoopbackProvider(Provider):
    name = "loopback"
    key_env = "LOOPBACK_API_KEY"
    base_url_env = "LOOPBACK_BASE_URL"

    def __init__(self):
        self.calls = 0

    def sdk(self, api_key, base_url, timeout_s):
        return openai.OpenAI(api_key=api_key, base_url=base_url or os.environ.get(self.base_url_env),
                             max_retries=0, timeout=timeout_s)

    def complete(self, sdk, req) -> Completion:
        self.calls += 1
        kwargs = {"model": req.model, "messages": list(req.messages), "max_tokens": req.max_tokens, "n": req.n,
                  "temperature": req.temperature, "seed": req.seed}
        resp = sdk.chat.completions.create(**supported(sdk.chat.completions.create, kwargs))
        return Completion([c.message.content or "" for c in resp.choices], resp.usage.prompt_tokens,
                          resp.usage.completion_tokens)

    def transient(self, exc):
        return classify_sdk_error(exc, (openai.RateLimitError,), (openai.APITimeoutError,),
                                  (openai.APIConnectionError,))
