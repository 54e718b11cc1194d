"""Back-translation in a separate process (for the kill-and-resume test). With DIE_AFTER=k it
SIGKILLs itself right after its k-th paid answer is cached: a crash between two steps."""
import os
import signal
import sys

from conftest import EXAMPLE_CRATE
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.generation.settings import BacktranslateSettings
from synth.generation.backtranslate import run_backtranslation
from synth.llm.models import ModelSettings
from synth.rows.jsonl import write_jsonl
from synth.llm.client import LLMClient
from synth.llm.cost.ledger import Ledger
from synth.llm.response_cache import ResponseCache


def main():
    base_url, workdir, die_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    decls = [d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
             if d.kind in ("fn", "method")]
    client = LLMClient(Ledger(f"{workdir}/ledger.sqlite", 5.0), ResponseCache(f"{workdir}/cache"))
    if die_after:
        real, paid = client.complete, [0]

        def complete(req):
            response = real(req)
            paid[0] += not response.cached
            if paid[0] == die_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return response

        client.complete = complete
    # One item at a time: the kill lands between two calls, never with another call in flight
    # (a call in flight at a crash is the ledger's business: see test_sigkill_mid_run_then_restart).
    models = {"w": ModelSettings(provider="openai", model="gpt-4o-mini", base_url=base_url + "/v1")}
    result = run_backtranslation(decls, client, RustOracle(OracleSettings(jobs=1)), BacktranslateSettings(model="w", workers=1), models,
                                 checkpoint_path=f"{workdir}/checkpoints.sqlite")
    write_jsonl(f"{workdir}/rows.jsonl", result.rows)
    write_jsonl(f"{workdir}/rejected.jsonl", [r.to_json() for r in sorted(result.rejected, key=lambda r: r.about["decl"])])
    print(len(result.rows), len(result.rejected), result.stats["write"] + result.stats["verify"], flush=True)


if __name__ == "__main__":
    main()
