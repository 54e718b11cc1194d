"""What a run needs before its lanes start: the declarations of the config's sources, an oracle
per language, the models, a check that every paid model has a key and a price, and the
recovery of what an earlier, killed run left open (ledgers, batches)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from synth.settings.config import ConfigError, SynthSettings
from synth.llm.request import BudgetExceeded


class DeferredToBatch(BudgetExceeded):
    """Batch mode: the request was queued for the batch API; its answer comes in a later run."""


class DeferringClient:
    """Batch mode: answers from the response cache, queues everything else for the batch API."""

    def __init__(self, client, queue: list):
        self.client, self.queue = client, queue
        self.cache, self.ledger, self.stats = client.cache, client.ledger, client.stats

    def complete(self, req):
        # Cached answers as usual; several samples in one request (RFT's `n`) are not something the
        # batch APIs take, so those are made online (under the same cap).
        if req.n > 1 or all(self.client.cache.get(req.key(i)) for i in range(req.n)):
            return self.client.complete(req)
        self.queue.append(req)
        raise DeferredToBatch("queued for the batch API; answered in a later run")


def preflight(config: SynthSettings, lanes: dict, cap: float) -> None:
    """Before anything runs: every model a lane will call has a key and a price (a missing one
    would otherwise surface as a failure in the middle of the run)."""
    from synth.llm.cost.prices import PriceMissing, PriceTable
    from synth.llm.providers import provider
    prices = PriceTable(config.run.prices) if config.run.prices else PriceTable()
    for name, settings in config.lane_settings().items():
        if not settings.enabled or name not in lanes:
            continue
        for ref in settings.model_refs():
            model = config.models[ref]
            if model.free or cap <= 0:
                continue
            env = provider(model.provider).key_env
            if not os.environ.get(env):
                raise ConfigError(f"lanes.{name} uses model {ref!r} ({model.provider}): {env} is not set "
                                  "(keys come only from the environment)")
            try:
                prices.price(model.model)
            except PriceMissing as exc:
                raise ConfigError(f"lanes.{name}: {exc}") from exc


def collect_batches(out: Path, responses, prices) -> int:
    """Collect every earlier run's submitted batches into the response cache, settling each answer
    in the ledger of the run that reserved it. Returns the number still running."""
    from synth.llm.batch import BatchRunner
    from synth.llm.client import LLMClient
    from synth.llm.cost.ledger import Ledger
    pending = 0
    for state in sorted((out / "batches").glob("*.sqlite")) if (out / "batches").is_dir() else []:
        ledger = Ledger(out / "ledgers" / state.name, 0.0)  # settling needs no cap
        pending += BatchRunner(LLMClient(ledger, responses, prices), state).collect().pending
    return pending


def recover_crashed_ledgers(directory: Path, cache) -> None:
    """A run killed mid-call leaves reservations open in its ledger: settle those the response
    cache shows were answered, keep the rest as lost (at their worst case), so the record of what
    was spent stays true."""
    from synth.llm.client import LLMClient
    from synth.llm.cost.ledger import Ledger
    for path in sorted(directory.glob("*.sqlite")) if directory.is_dir() else []:
        ledger = Ledger(path, 0.0)
        if ledger.totals().calls_open:
            LLMClient(ledger, cache).recover()


def last_stats(out: str | Path) -> dict | None:
    path = Path(out) / "stats" / "run.json"
    return json.loads(path.read_text()) if path.exists() else None
