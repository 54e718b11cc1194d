"""Token counts for plans and worst-case reservations.

OpenAI models: the real BPE vocabularies (o200k_base / cl100k_base) through `bpe-openai`, which
ships them in the package (tiktoken downloads its vocabularies at run time, impossible offline).
Other models (Anthropic, local): the o200k count times 1.15, a documented approximation
(Anthropic's tokenizer is not public; its counts run higher than o200k on code).
"""
from __future__ import annotations

import functools

import bpe_openai

APPROXIMATION_FACTOR = 1.15
MESSAGE_OVERHEAD = 4  # role and separators per chat message, as OpenAI's cookbook counts them


@functools.cache
def _encoding(name: str):
    return bpe_openai.get_encoding(name)


def encoding_for(model: str) -> str:
    try:
        return bpe_openai.encoding_name_for_model(model)
    except Exception:  # noqa: BLE001 - unknown to bpe-openai: not an OpenAI model
        return "o200k_base"


def count_text(text: str, model: str, provider: str = "openai") -> int:
    n = len(_encoding(encoding_for(model)).encode(text))
    return n if provider == "openai" else int(n * APPROXIMATION_FACTOR + 0.999)


def count_messages(messages: list[dict], model: str, provider: str = "openai") -> int:
    total = 3  # reply priming
    for m in messages:
        total += MESSAGE_OVERHEAD + count_text(str(m.get("content", "")), model, provider)
    return total
