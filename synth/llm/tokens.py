"""Token counts for plans and worst-case reservations: each provider counts a text its own way
(synth.llm.providers: real BPE for OpenAI, the o200k x 1.15 approximation elsewhere); a chat
message adds its role and separators. Without a provider, the model's plain BPE count."""
from __future__ import annotations

from .bpe import bpe_count
from .providers import provider as _provider

MESSAGE_OVERHEAD = 4  # role and separators per chat message, as OpenAI's cookbook counts them


def count_text(text: str, model: str, provider: str | None = None) -> int:
    return bpe_count(text, model) if provider is None else _provider(provider).count_text(text, model)


def count_messages(messages: list[dict], model: str, provider: str | None = None) -> int:
    total = 3  # reply priming
    for m in messages:
        total += MESSAGE_OVERHEAD + count_text(str(m.get("content", "")), model, provider)
    return total
