"""The provider registry: every LLM provider synth can call, by name. A new provider is one module
(a `Provider` subclass) plus one `register(...)` line; a name nobody registered is an error
listing the known ones, never a fallback to another provider."""
from __future__ import annotations

from oracles.errors import InputError
from .anthropic import AnthropicProvider
from .base import BatchUnsupported, Completion, Provider, UnsupportedParameter, classify_sdk_error, supported
from .local import LocalProvider
from .openai import OpenAIProvider

__all__ = ["BatchUnsupported", "Completion", "Provider", "UnknownProvider", "UnsupportedParameter",
           "classify_sdk_error", "names", "provider", "register", "supported", "unregister"]

_REGISTRY: dict[str, Provider] = {}


class UnknownProvider(InputError):
    pass


def register(new: Provider) -> Provider:
    """Make `new` callable by its name. The same name taken by another kind of provider is refused."""
    if not isinstance(new, Provider):
        raise TypeError(f"{new!r} is not a synth.llm.providers.Provider")
    held = _REGISTRY.get(new.name)
    if held is not None and type(held) is not type(new):
        raise ValueError(f"provider name {new.name!r} is already taken by {type(held).__name__}")
    _REGISTRY[new.name] = new
    return new


def unregister(name: str) -> None:
    """Take a provider out (a test that added one puts the registry back as it was)."""
    _REGISTRY.pop(name, None)


def provider(name: str) -> Provider:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownProvider(f"unknown LLM provider {name!r}; known providers: {', '.join(names())}") from None


def names() -> list[str]:
    return sorted(_REGISTRY)


register(OpenAIProvider())
register(AnthropicProvider())
register(LocalProvider())
