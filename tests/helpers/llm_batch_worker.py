"""Submits (and then hangs, to be killed) or collects batches, for the batch restart test."""
import json
import sys
import time

from synth.llm.batch import BatchRunner
from synth.llm.client import LLMClient, LLMRequest
from synth.llm.cost.ledger import Ledger
from synth.llm.response_cache import ResponseCache


def requests(base_url: str) -> list[LLMRequest]:
    out = [LLMRequest("openai", "gpt-4o-mini", ({"role": "user", "content": f"batch task {i}"},), max_tokens=150,
                      base_url=base_url + "/v1") for i in range(40)]
    out += [LLMRequest("anthropic", "claude-haiku-4-5", ({"role": "user", "content": f"batch task {i}"},),
                       max_tokens=150, base_url=base_url) for i in range(20)]
    return out


def main():
    mode, base_url, workdir = sys.argv[1:4]
    client = LLMClient(Ledger(f"{workdir}/ledger.sqlite", 1.0), ResponseCache(f"{workdir}/cache"))
    runner = BatchRunner(client, f"{workdir}/batches.sqlite")
    if mode == "submit":
        print("submitted", runner.submit(requests(base_url)), flush=True)
        time.sleep(120)  # killed here, before collecting
    else:
        print(json.dumps(runner.collect().__dict__), flush=True)
        answered = sum(client.cache.get(r.key()) is not None for r in requests(base_url))
        print(json.dumps({"answered": answered, "settled": client.ledger.totals().settled_usd}), flush=True)


if __name__ == "__main__":
    main()
