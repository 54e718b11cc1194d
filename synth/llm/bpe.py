"""Token counts from OpenAI's real BPE vocabularies (o200k_base / cl100k_base) through
`bpe-openai`, which ships them in the package (tiktoken downloads its vocabularies at run time,
impossible offline); and the documented approximation for providers whose tokenizer is not
public: the o200k count times 1.15 (Anthropic's counts run higher than o200k on code)."""
from __future__ import annotations

import functools

import bpe_openai

APPROXIMATION_FACTOR = 1.15


@functools.cache
def _encoding(name: str):
    return bpe_openai.get_encoding(name)


def encoding_for(model: str) -> str:
    try:
        return bpe_openai.encoding_name_for_model(model)
    except Exception:  # noqa: BLE001 - unknown to bpe-openai: not an OpenAI model
        return "o200k_base"


def bpe_count(text: str, model: str) -> int:
    return len(_encoding(encoding_for(model)).encode(text))


def approximate_count(text: str, model: str) -> int:
    return int(bpe_count(text, model) * APPROXIMATION_FACTOR + 0.999)
