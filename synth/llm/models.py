"""The one model settings type: which provider and model a lane calls, and how. Config files
validate into it, engines take it, fingerprints print it."""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from oracles.errors import MissingInput
from synth.prompting.templates import template_hash
from synth.settings.strict import Strict

from synth.llm.request import LLMRequest


class ModelSettings(Strict):
    model_config = ConfigDict(frozen=True)  # hashable: a dict key, a fingerprint part

    provider: str  # a registered provider name (synth.llm.providers.names(); the config checks it)
    model: str
    base_url: str | None = None  # else the SDK's own variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, ...)
    max_tokens: int = Field(600, gt=0)
    temperature: float | None = None
    free: bool = False  # a local server: costs nothing, needs no price
    adapter: str | None = None  # provider "local": a LoRA adapter folder applied to the model folder
    dtype: Literal["float32", "bfloat16"] = "float32"  # provider "local": the weights while sampling
    # the server answers n > 1 samples in one request (OpenAI and vLLM do; `transformers serve` does not:
    # then each sample is its own request, with its own seed)
    multi_sample: bool = True

    @model_validator(mode="after")
    def _local(self) -> "ModelSettings":
        if self.provider == "local":
            object.__setattr__(self, "free", True)  # in-process: costs nothing
        elif self.adapter or self.dtype != "float32":
            raise ValueError(f"adapter and dtype are for provider \"local\" models (this one is {self.provider!r})")
        return self

    @property
    def is_local(self) -> bool:
        return self.provider == "local"

    def request(self, prompt: str, template_name: str | None) -> LLMRequest:
        """One user message rendered from the prompt template `template_name` (None: a task's prompt as it is)."""
        return LLMRequest(self.provider, self.model, ({"role": "user", "content": prompt},),
                          max_tokens=self.max_tokens, temperature=self.temperature, base_url=self.base_url,
                          free=self.free, template_hash=template_hash(template_name) if template_name else "")

    def fingerprint(self) -> str:
        """Everything a call's answer depends on, as stable text. It is the text the former
        ModelSpec printed, so stores fingerprinted before this type keep their fingerprints."""
        text = (f"ModelSpec(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r}, "
                f"max_tokens={self.max_tokens!r}, temperature={self.temperature!r}, free={self.free!r})")
        if not self.multi_sample:
            text += " one-sample-requests"
        if self.is_local:  # the weights themselves: a new adapter at the same path is another model
            text += f" weights={folder_hash(self.model)} adapter={folder_hash(self.adapter) if self.adapter else None}"
        return text

    def __str__(self) -> str:
        return self.fingerprint()


def folder_hash(folder: str) -> str:
    """The content of a model or adapter folder: every file's name and bytes (the weights, the
    config, the tokenizer), so a retrained adapter saved at the same path is told apart."""
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    if not files:
        raise MissingInput(f"{folder}: no model files (a local model is a Hugging Face model folder)")
    return _hash_files(tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files), str(folder))


@functools.lru_cache(maxsize=32)  # keyed by the files' sizes and times: hashed once per process, again after a change
def _hash_files(stamp: tuple, folder: str) -> str:
    digest = hashlib.sha256()
    for name, _, _ in stamp:
        digest.update(str(Path(name).relative_to(folder)).encode() + b"\0")
        with open(name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]
