"""Token counts for plans and worst-case reservations: each provider counts a text its own way
(synth.llm.providers: real BPE for OpenAI, the o200k x 1.15 approximation elsewhere); a chat
message adds its role and separators. Without a provider, the model's plain BPE count."""
from __future__ import annotations

from synth.llm.providers.base import MESSAGE_OVERHEAD, bpe_count
from synth.llm.providers import provider as _provider



def count_text(text: str, model: str, provider: str | None = None) -> int:
    return bpe_count(text, model) if provider is None else _provider(provider).count_text(text, model)


def count_messages(messages: list[dict], model: str, provider: str | None = None) -> int:
    if provider is not None:
        return _provider(provider).count_messages(messages, model)
    return 3 + sum(MESSAGE_OVERHEAD + bpe_count(str(m.get("content", "")), model) for m in messages)
