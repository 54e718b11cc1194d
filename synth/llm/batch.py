"""Batch mode (half price), through each provider's batch API (synth.llm.providers: OpenAI's Batch
API, Anthropic's Message Batches; a provider without one refuses batch mode).

Submitting is made crash-safe by writing the submission down before and after the provider
call: each request's worst case (at batch prices) is reserved in the ledger first; the
submission id goes to the provider in the batch metadata where the API has one (OpenAI), so a
restart that finds a submission without a batch id adopts the provider's batch instead of paying
for a second one.
`collect` fetches finished batches, caches every answer and settles its reservation; a restart
collects what an earlier process submitted, never resubmits it.
"""
from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from synth.llm.request import BudgetExceeded, LLMRequest
from synth.llm.providers import provider as _provider

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
    def __init__(self, client, state_path: str | Path):
        self.client = client
        self.db = sqlite3.connect(state_path, timeout=60, isolation_level=None)
        self.db.executescript(SCHEMA)

    # -- submit ---------------------------------------------------------------------------------

    def submit(self, requests: list[LLMRequest]) -> list[str]:
        """Submit the uncached requests, one batch per provider and endpoint. Returns submission ids.
        Requests whose worst case no longer fits under the cap are left out (BudgetExceeded if none fits)."""
        groups: dict[tuple[str, str], list[tuple[LLMRequest, dict]]] = {}
        for req in requests:
            if req.n != 1:
                raise ValueError("batch mode takes n=1 requests (ask for several samples as separate requests)")
            if self.client.cache.get(req.key()) is None:
                body = _provider(req.provider).batch_body(req)  # refused (no batch API, a parameter) up front
                groups.setdefault((req.provider, req.base_url or ""), []).append((req, body))
        submissions = []
        for (provider, base_url), pairs in groups.items():
            items = []
            for req, body in pairs:
                price = self.client.prices.price(req.model, free=req.free)
                worst = price.cost(_provider(provider).count_messages(list(req.messages), req.model), req.max_tokens, batch=True)
                reservation = self.client.ledger.reserve(req.key(), worst)
                if reservation is None:
                    break
                items.append({"custom_id": f"r{len(items)}", "key": req.key(), "reservation": reservation,
                              "model": req.model, "free": req.free, "request": body})
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
        sdk = self.client.caller.sdk(provider, base_url or None, all(i["free"] for i in items))
        return _provider(provider).batch_create(sdk, items, submission)

    # -- collect --------------------------------------------------------------------------------

    def collect(self) -> CollectReport:
        report = CollectReport()
        rows = self.db.execute("SELECT submission, provider, base_url, batch_id, state, items FROM batches "
                               "WHERE state IN ('submitting', 'submitted')").fetchall()
        for submission, provider, base_url, batch_id, state, items_json in rows:
            items = json.loads(items_json)
            sdk = self.client.caller.sdk(provider, base_url or None, all(i["free"] for i in items))
            if state == "submitting":
                batch_id = _provider(provider).batch_adopt(sdk, submission)
                if batch_id is None:  # the process died before the provider accepted it: nothing was charged
                    for item in items:
                        self.client.ledger.release(item["reservation"], "batch never reached the provider")
                    self.db.execute("UPDATE batches SET state='abandoned' WHERE submission=?", (submission,))
                    report.abandoned += 1
                    continue
                self.db.execute("UPDATE batches SET batch_id=?, state='submitted' WHERE submission=?",
                                (batch_id, submission))
                report.adopted += 1
            results = _provider(provider).batch_results(sdk, batch_id)
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
