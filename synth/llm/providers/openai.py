"""OpenAI, and any OpenAI-compatible server (a local one too, with `free`): chat completions, the
Batch API, and the real BPE token counts. Key from OPENAI_API_KEY; base URL from the request or
the SDK's own OPENAI_BASE_URL."""
from __future__ import annotations

import io
import json

import openai

from .base import bpe_count
from .base import Completion, Provider, classify_sdk_error, supported

ENDPOINT = "/v1/chat/completions"


class OpenAIProvider(Provider):
    name = "openai"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"

    def sdk(self, api_key, base_url, timeout_s):
        return openai.OpenAI(api_key=api_key, max_retries=0, timeout=timeout_s,
                             **({"base_url": base_url} if base_url else {}))

    def complete(self, sdk, req) -> Completion:
        # n only when it asks for more than the default one sample: servers without `n` refuse it
        # even as 1 (`transformers serve`)
        kwargs = {"model": req.model, "messages": list(req.messages), "max_tokens": req.max_tokens,
                  "n": req.n if req.n != 1 else None, "temperature": req.temperature, "seed": req.seed}
        resp = sdk.chat.completions.create(**supported(sdk.chat.completions.create, kwargs))
        usage = resp.usage
        cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        return Completion([c.message.content or "" for c in resp.choices], usage.prompt_tokens,
                          usage.completion_tokens, cached)

    def transient(self, exc):
        return classify_sdk_error(exc, (openai.RateLimitError,), (openai.APITimeoutError,),
                                  (openai.APIConnectionError,))

    def count_text(self, text, model):
        return bpe_count(text, model)

    # -- Batch API --------------------------------------------------------------------------------

    def batch_body(self, req) -> dict:
        body = {"model": req.model, "messages": list(req.messages), "max_tokens": req.max_tokens}
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.seed is not None:
            body["seed"] = req.seed
        return body

    def batch_create(self, sdk, items, submission):
        lines = "".join(json.dumps({"custom_id": i["custom_id"], "method": "POST", "url": ENDPOINT,
                                    "body": i["request"]}) + "\n" for i in items)
        uploaded = sdk.files.create(file=("batch.jsonl", io.BytesIO(lines.encode())), purpose="batch")
        batch = sdk.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h",
                                   metadata={"synth_submission": submission})
        return batch.id

    def batch_adopt(self, sdk, submission):
        for batch in sdk.batches.list(limit=100):
            if (batch.metadata or {}).get("synth_submission") == submission:
                return batch.id
        return None

    def batch_results(self, sdk, batch_id):
        batch = sdk.batches.retrieve(batch_id)
        if batch.status not in ("completed", "failed", "expired", "cancelled"):
            return None
        out = []
        if batch.output_file_id:
            for line in sdk.files.content(batch.output_file_id).text.splitlines():
                record = json.loads(line)
                response = record.get("response") or {}
                body = response.get("body") or {}
                if response.get("status_code") == 200 and body.get("choices"):
                    usage = body["usage"]
                    out.append((record["custom_id"], (body["choices"][0]["message"]["content"] or "",
                                                      usage["prompt_tokens"], usage["completion_tokens"])))
                else:
                    out.append((record["custom_id"], None))
        return out
