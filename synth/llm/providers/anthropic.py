"""Anthropic: the Messages API (system messages go in `system`; no `n`, so one call per sample),
Message Batches, and the o200k x 1.15 token approximation (its tokenizer is not public). Key from
ANTHROPIC_API_KEY; base URL from the request or the SDK's own ANTHROPIC_BASE_URL."""
from __future__ import annotations

import anthropic

from .base import Completion, Provider, classify_sdk_error, supported


def _split_system(messages) -> tuple[str, list[dict]]:
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    return system, [m for m in messages if m["role"] != "system"]


def _text(message) -> str:
    return "".join(block.text for block in message.content if getattr(block, "type", "") == "text")


class AnthropicProvider(Provider):
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"

    def sdk(self, api_key, base_url, timeout_s):
        return anthropic.Anthropic(api_key=api_key, max_retries=0, timeout=timeout_s,
                                   **({"base_url": base_url} if base_url else {}))

    def complete(self, sdk, req) -> Completion:
        system, turns = _split_system(req.messages)
        out = Completion([], 0, 0, 0)
        for _ in range(req.n):  # the Messages API has no n
            kwargs = {"model": req.model, "messages": turns, "max_tokens": req.max_tokens,
                      "temperature": req.temperature, "system": system or None}
            resp = sdk.messages.create(**supported(sdk.messages.create, kwargs))
            out.texts.append(_text(resp))
            out.input_tokens += resp.usage.input_tokens
            out.output_tokens += resp.usage.output_tokens
            out.cached_tokens += getattr(resp.usage, "cache_read_input_tokens", 0) or 0
        return out

    def transient(self, exc):
        return classify_sdk_error(exc, (anthropic.RateLimitError,), (anthropic.APITimeoutError,),
                                  (anthropic.APIConnectionError,))

    # -- Message Batches --------------------------------------------------------------------------

    def batch_body(self, req) -> dict:
        # checked against the installed SDK's Messages.create, as a live call is
        system, turns = _split_system(req.messages)
        return supported(anthropic.resources.Messages.create,
                         {"model": req.model, "max_tokens": req.max_tokens, "messages": turns,
                          "temperature": req.temperature, "system": system or None})

    def batch_create(self, sdk, items, submission):
        # Message Batches carry no metadata: `submission` cannot go with it (see batch_adopt)
        batch = sdk.messages.batches.create(requests=[{"custom_id": i["custom_id"], "params": i["request"]}
                                                      for i in items])
        return batch.id

    def batch_results(self, sdk, batch_id):
        batch = sdk.messages.batches.retrieve(batch_id)
        if batch.processing_status != "ended":
            return None
        out = []
        for entry in sdk.messages.batches.results(batch_id):
            if entry.result.type == "succeeded":
                message = entry.result.message
                out.append((entry.custom_id, (_text(message), message.usage.input_tokens,
                                              message.usage.output_tokens)))
            else:
                out.append((entry.custom_id, None))
        return out
