"""A separate process making calls through LLMClient, for the crash test (it gets SIGKILLed)."""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from synth.llm.client import BudgetExceeded, CallFailed, LLMClient, LLMRequest, RetryPolicy
from synth.llm.cost.ledger import Ledger
from synth.llm.response_cache import ResponseCache


def request(i: int, base_url: str) -> LLMRequest:
    return LLMRequest("openai", "gpt-4o-mini", ({"role": "user", "content": f"task number {i}: write a function"},),
                      max_tokens=200, base_url=base_url)


def main():
    base_url, ledger_path, cache_dir, cap, count, workers = sys.argv[1:7]
    client = LLMClient(Ledger(ledger_path, float(cap)), ResponseCache(cache_dir), retry=RetryPolicy(base_s=0.01))
    print("recovered", client.recover(), flush=True)

    def one(i):
        try:
            client.complete(request(i, base_url))
            return "ok"
        except BudgetExceeded:
            return "budget"
        except CallFailed:
            return "failed"

    with ThreadPoolExecutor(int(workers)) as pool:
        for i, outcome in enumerate(pool.map(one, range(int(count)))):
            print(i, outcome, flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
