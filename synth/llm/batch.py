"""Batch mode (half price): OpenAI Batch API and Anthropic Message Batches.

Submitting is made crash-safe by writing the submission down before and after the provider
call: each request's worst case (at batch prices) is reserved in the ledger first; the
submission id goes to the provider in the batch metadata (OpenAI), so a restart that finds a
submission without a batch id adopts the provider's batch instead of paying for a second one.
`collect` fetches finished batches, caches every answer and settles its reservation; a restart
collects what an earlier process submitted, never resubmits it.
"""
from __future__ import annotations

import io
import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .client import BudgetExceeded, LLMClient, LLMRequest, UnsupportedParameter
from .tokens import count_messages

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    submission TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    base_url TEXT NOT NULL,
    batch_id TEXT,
    state TEXT NOT NULL CHECK (state IN ('submitting', 'submitted', 'collected', 'abandoned')),
    items TEXT NOT NULL,
    created REAL NOT NULL
);
"""


@dataclass
class CollectReport:
    collected_batches: int = 0
    answers: int = 0
    failed: int = 0
    pending: int = 0
    adopted: int = 0
    abandoned: int = 0


class BatchRunner:
    def __init__(self, client: LLMClient, state_path: str | Path):
        self.client = client
        self.db = sqlite3.connect(state_path, timeout=60, isolation_level=None)
        self.db.executescript(SCHEMA)

    # -- submit ---------------------------------------------------------------------------------

    def submit(self, requests: list[LLMRequest]) -> list[str]:
        """Submit the uncached requests, one batch per provider and endpoint. Returns submission ids.
        Requests whose worst case no longer fits under the cap are left out (BudgetExceeded if none fits)."""
        groups: dict[tuple[str, str], list[LLMRequest]] = {}
        for req in requests:
            if req.n != 1:
                raise ValueError("batch mode takes n=1 requests (ask for several samples as separate requests)")
            if self.client.cache.get(req.key()) is None:
                groups.setdefault((req.provider, req.base_url or ""), []).append(req)
        submissions = []
        for (provider, base_url), reqs in groups.items():
            items = []
            for req in reqs:
                price = self.client.prices.price(req.model, free=req.free)
                worst = price.cost(count_messages(list(req.messages), req.model, provider), req.max_tokens, batch=True)
                reservation = self.client.ledger.reserve(req.key(), worst)
                if reservation is None:
                    break
                items.append({"custom_id": f"r{len(items)}", "key": req.key(), "reservation": reservation,
                              "model": req.model, "free": req.free, "request": _body(req)})
            if not items:
                raise BudgetExceeded("no request of the batch fits under the cap")
            submission = uuid.uuid4().hex
            self.db.execute("INSERT INTO batches VALUES (?, ?, ?, NULL, 'submitting', ?, ?)",
                            (submission, provider, base_url, json.dumps(items), time.time()))
            batch_id = self._create(provider, base_url, items, submission)
            self.db.execute("UPDATE batches SET batch_id=?, state='submitted' WHERE submission=?", (batch_id, submission))
            submissions.append(submission)
        return submissions

    def _create(self, provider: str, base_url: str, items: list[dict], submission: str) -> str:
        sdk = self.client._client(provider, base_url or None, all(i["free"] for i in items))
        if provider == "openai":
            lines = "".join(json.dumps({"custom_id": i["custom_id"], "method": "POST", "url": "/v1/chat/completions",
                                        "body": i["request"]}) + "\n" for i in items)
            uploaded = sdk.files.create(file=("batch.jsonl", io.BytesIO(lines.encode())), purpose="batch")
            batch = sdk.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                       completion_window="24h", metadata={"synth_submission": submission})
            return batch.id
        batch = sdk.messages.batches.create(requests=[{"custom_id": i["custom_id"], "params": i["request"]}
                                                      for i in items])
        return batch.id

    # -- collect --------------------------------------------------------------------------------

    def collect(self) -> CollectReport:
        report = CollectReport()
        rows = self.db.execute("SELECT submission, provider, base_url, batch_id, state, items FROM batches "
                               "WHERE state IN ('submitting', 'submitted')").fetchall()
        for submission, provider, base_url, batch_id, state, items_json in rows:
            items = json.loads(items_json)
            sdk = self.client._client(provider, base_url or None, all(i["free"] for i in items))
            if state == "submitting":
                batch_id = self._adopt(sdk, provider, submission)
                if batch_id is None:  # the process died before the provider accepted it: nothing was charged
                    for item in items:
                        self.client.ledger.release(item["reservation"], "batch never reached the provider")
                    self.db.execute("UPDATE batches SET state='abandoned' WHERE submission=?", (submission,))
                    report.abandoned += 1
                    continue
                self.db.execute("UPDATE batches SET batch_id=?, state='submitted' WHERE submission=?",
                                (batch_id, submission))
                report.adopted += 1
            results = self._results(sdk, provider, batch_id)
            if results is None:
                report.pending += 1
                continue
            by_id = {i["custom_id"]: i for i in items}
            for custom_id, outcome in results:
                item = by_id.pop(custom_id, None)
                if item is None:
                    continue
                if outcome is None:
                    self.client.ledger.release(item["reservation"], "batch request failed")
                    report.failed += 1
                    continue
                text, tin, tout = outcome
                price = self.client.prices.price(item["model"], free=item["free"])
                cost = price.cost(tin, tout, batch=True)
                self.client.cache.put(item["key"], {"text": text, "input_tokens": tin, "output_tokens": tout,
                                                    "cost_usd": cost})
                self.client.ledger.settle(item["reservation"], cost, tin, tout, note=f"batch {batch_id}")
                report.answers += 1
            for item in by_id.values():  # listed by us, missing from the results
                self.client.ledger.release(item["reservation"], "missing from the batch results")
                report.failed += 1
            self.db.execute("UPDATE batches SET state='collected' WHERE submission=?", (submission,))
            report.collected_batches += 1
        return report

    def _adopt(self, sdk, provider: str, submission: str) -> str | None:
        if provider != "openai":
            return None  # Message Batches carry no metadata to find them by
        for batch in sdk.batches.list(limit=100):
            if (batch.metadata or {}).get("synth_submission") == submission:
                return batch.id
        return None

    def _results(self, sdk, provider: str, batch_id: str):
        """[(custom_id, (text, input_tokens, output_tokens) or None)] once the batch has ended, else None."""
        if provider == "openai":
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
        batch = sdk.messages.batches.retrieve(batch_id)
        if batch.processing_status != "ended":
            return None
        out = []
        for entry in sdk.messages.batches.results(batch_id):
            if entry.result.type == "succeeded":
                message = entry.result.message
                text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
                out.append((entry.custom_id, (text, message.usage.input_tokens, message.usage.output_tokens)))
            else:
                out.append((entry.custom_id, None))
        return out


def _body(req: LLMRequest) -> dict:
    if req.provider == "openai":
        body = {"model": req.model, "messages": list(req.messages), "max_tokens": req.max_tokens}
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.seed is not None:
            body["seed"] = req.seed
        return body
    if req.temperature is not None:
        raise UnsupportedParameter("the installed anthropic SDK does not accept `temperature`")
    system = "\n".join(m["content"] for m in req.messages if m["role"] == "system")
    body = {"model": req.model, "max_tokens": req.max_tokens,
            "messages": [m for m in req.messages if m["role"] != "system"]}
    if system:
        body["system"] = system
    return body
