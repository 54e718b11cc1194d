"""The local executor: checks and calls made here (the oracles' own process pools), as they are."""
from __future__ import annotations


class LocalExecutor:
    """Everything here: oracles and the client as they are."""

    def oracle(self, oracle, settings):
        return oracle

    def sender(self, retry, call_on_worker):
        """Where an LLMClient sends its calls (None: from this process)."""
        return None

    def stats(self, oracles: list) -> dict:
        return {"executor": "local"}

    def close(self) -> None:
        pass
