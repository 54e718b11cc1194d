"""What a provider is: the SDK it speaks, one completion call, which of its errors are worth a
retry, how it counts tokens, and (when it has one) its batch API. The client, the batch runner and
the token counts reach a provider only through this interface, found by name in the registry."""
from __future__ import annotations

import abc
import functools
import inspect
from dataclasses import dataclass

import bpe_openai

from oracles.errors import InputError

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


def bpe_count(text: str, model: str) -> int:
    return len(_encoding(encoding_for(model)).encode(text))


def approximate_count(text: str, model: str) -> int:
    return int(bpe_count(text, model) * APPROXIMATION_FACTOR + 0.999)


class UnsupportedParameter(InputError):
    """The installed SDK no longer accepts a parameter the request sets: refused, never dropped."""


class BatchUnsupported(InputError):
    """The provider has no batch API: its requests are sent one by one."""


@dataclass
class Completion:
    texts: list[str]
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


def supported(method, kwargs: dict) -> dict:
    """Drop only unset parameters; a set one the installed SDK does not accept is an error."""
    accepted = inspect.signature(method).parameters
    out = {}
    for name, value in kwargs.items():
        if value is None:
            continue
        if name not in accepted:
            raise UnsupportedParameter(f"{getattr(method, '__qualname__', method)} (installed SDK) does not accept "
                                       f"`{name}`; remove it from the lane's model settings")
        out[name] = value
    return out


def classify_sdk_error(exc, rate_limit: tuple, timeout: tuple, connection: tuple) -> tuple[bool, bool]:
    """(retry?, certainly not charged?) for an error of an SDK built like openai's and anthropic's."""
    status = getattr(exc, "status_code", None)
    if isinstance(exc, rate_limit) or status == 429:
        return True, True
    if status is not None and status >= 500:
        return True, True
    if isinstance(exc, timeout):
        return True, False  # the server may have done (and billed) the work
    if isinstance(exc, connection):
        return True, False
    return False, True


class Provider(abc.ABC):
    name: str  # what model settings and requests call it
    key_env: str  # the only place its API key comes from
    base_url_env: str  # where its SDK looks for a base URL when the request names none

    @abc.abstractmethod
    def sdk(self, api_key: str, base_url: str | None, timeout_s: float):
        """The SDK client, with the SDK's own retries off (the client retries, never paying twice)."""

    @abc.abstractmethod
    def complete(self, sdk, req) -> Completion:
        """One call for an LLMRequest: its n texts and the usage the provider reported."""

    @abc.abstractmethod
    def transient(self, exc: Exception) -> tuple[bool, bool]:
        """(retry?, certainly not charged?) for an error `complete` raised."""

    def count_messages(self, messages: list[dict], model: str) -> int:
        """Prompt tokens of a chat: each message's text plus its role and separators."""
        total = 3  # reply priming
        for m in messages:
            total += MESSAGE_OVERHEAD + self.count_text(str(m.get("content", "")), model)
        return total

    def count_text(self, text: str, model: str) -> int:
        """Tokens of `text` as this provider bills them; without a public tokenizer, the documented
        o200k x 1.15 approximation."""
        return approximate_count(text, model)

    # -- batch API (half price); a provider without one refuses batch mode by name ----------------

    def batch_body(self, req) -> dict:
        raise BatchUnsupported(f"provider {self.name!r} has no batch API; run without batch mode")

    def batch_create(self, sdk, items: list[dict], submission: str) -> str:
        """Submit `items` ({custom_id, request: batch_body}); tag the batch with `submission` where
        the API allows, so `batch_adopt` can find it after a crash. Returns the batch id."""
        raise BatchUnsupported(f"provider {self.name!r} has no batch API")

    def batch_adopt(self, sdk, submission: str) -> str | None:
        """The id of a batch created under `submission`, or None (never reached the provider, or
        the API keeps no metadata to find it by)."""
        return None

    def batch_results(self, sdk, batch_id: str) -> list | None:
        """[(custom_id, (text, input_tokens, output_tokens) or None)] once the batch has ended, else None."""
        raise BatchUnsupported(f"provider {self.name!r} has no batch API")
