"""`provider = "local"`: a Hugging Face model folder (and optionally a LoRA adapter) sampled in this
process by synth/llm/local.py: free, no key, seeded, batched across prompts. The RFT lane samples
it directly (the policy's own samples); it has no API, so a lane that calls models through the
client is told so, with what to do instead."""
from __future__ import annotations

from oracles.errors import InputError
from .base import Completion, Provider


class LocalModelHasNoApi(InputError):
    pass


class LocalProvider(Provider):
    name = "local"
    key_env = "SYNTH_LOCAL_MODEL_NEEDS_NO_KEY"  # never read: nothing is sent anywhere
    base_url_env = ""

    def sdk(self, api_key, base_url, timeout_s):
        raise LocalModelHasNoApi("a `local` model is sampled in-process by the rft lane only; for the other lanes "
                                 "serve it (e.g. `transformers serve FOLDER`) and point an `openai` model with "
                                 "`base_url` and `free = true` at it")

    def complete(self, sdk, req) -> Completion:
        raise LocalModelHasNoApi("a `local` model has no API")

    def transient(self, exc):
        return False, True
