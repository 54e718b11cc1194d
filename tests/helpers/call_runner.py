"""Run many calls under the cap: stop cleanly when the budget is reached, say what is left
undone, and leave everything resumable (answers are cached; a rerun with a higher cap goes on)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from synth.llm.client import BudgetExceeded, CallFailed, LLMRequest, LLMResponse


@dataclass
class RunOutcome:
    responses: dict[int, LLMResponse] = field(default_factory=dict)
    undone: list[int] = field(default_factory=list)  # not made: the cap was reached
    failed: dict[int, str] = field(default_factory=dict)  # made, failed after retries (cause)
    stopped_at_cap: bool = False

    def message(self, cap_usd: float, spent_usd: float) -> str:
        if self.stopped_at_cap and cap_usd <= 0:
            return (f"no spending cap (cap is $0): {len(self.undone)} paid call(s) not made, $0 spent; "
                    f"{len(self.responses)} answered from the cache or free models. Set a positive --max-spend to run them.")
        if self.stopped_at_cap:
            return (f"stopped at the ${cap_usd:.2f} cap (${spent_usd:.4f} committed): {len(self.undone)} call(s) left "
                    f"undone; rerun with a higher cap to finish (answered calls are cached and cost nothing again).")
        return f"all {len(self.responses)} call(s) answered; {len(self.failed)} failed after retries."


def run_calls(client, requests: list[LLMRequest], workers: int = 8) -> RunOutcome:
    outcome = RunOutcome()
    stop = threading.Event()
    lock = threading.Lock()

    def costs_nothing(req: LLMRequest) -> bool:
        return req.free or all(client.cache.get(req.key(i)) for i in range(req.n))

    def one(index: int):
        if stop.is_set() and not costs_nothing(requests[index]):
            with lock:
                outcome.undone.append(index)
            return
        try:
            response = client.complete(requests[index])
        except BudgetExceeded:
            stop.set()  # no new call starts; calls in flight finish and settle
            with lock:
                outcome.undone.append(index)
                outcome.stopped_at_cap = True
            return
        except CallFailed as exc:
            with lock:
                outcome.failed[index] = str(exc.args[0])
            return
        with lock:
            outcome.responses[index] = response

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, range(len(requests))))
    outcome.undone.sort()
    return outcome
