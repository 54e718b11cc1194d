"""`synth bench refresh`: what a nightly refresh costs when nothing changed and when 1% of the
declarations changed, against a cold run, measured in one run on a generated corpus of distinct
functions (every stage enabled; the provider is the loopback server with scripted replies, the
compiler is the real rustc). Work is counted, not timed: LLM requests that reached the provider,
and candidates the compiler had to check (verdict-cache misses)."""
from __future__ import annotations

import math
import random
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FUNCTION = '''/// Scales `x` by {a}, shifts it by {b} and folds values above {c} back down.
pub fn {name}(x: i64) -> i64 {{
    let y = x * {a} + {b};
    if y > {c} {{
        y - {d}
    }} else {{
        y + {e}
    }}
}}
'''


def write_functions(dest: Path, n: int, seed: int, per_file: int = 20) -> list[str]:
    rng = random.Random(seed)
    names = [f"scale_{i:04d}" for i in range(n)]
    (dest / "src").mkdir(parents=True, exist_ok=True)
    files = math.ceil(n / per_file)
    for f in range(files):
        body = "".join(FUNCTION.format(name=name, a=rng.randint(2, 9), b=rng.randint(1, 99), c=rng.randint(100, 999),
                                       d=rng.randint(1, 50), e=rng.randint(1, 50))
                       for name in names[f * per_file:(f + 1) * per_file])
        (dest / "src" / f"part_{f:03d}.rs").write_text(body)
    (dest / "src" / "lib.rs").write_text("".join(f"pub mod part_{f:03d};\n" for f in range(files)))
    (dest / "Cargo.toml").write_text('[package]\nname = "refresh_bench"\nversion = "0.1.0"\nedition = "2021"\n')
    return names


def change_functions(dest: Path, names: list[str], count: int, seed: int) -> list[str]:
    """Edit `count` functions' bodies (another constant in the else branch)."""
    chosen = sorted(random.Random(seed + 1).sample(names, count))
    for name in chosen:
        for path in (dest / "src").glob("part_*.rs"):
            text = path.read_text()
            head = f"pub fn {name}(x: i64) -> i64 {{"
            if head in text:
                start = text.index(head)
                end = text.index("\n}\n", start)
                path.write_text(text[:start] + text[start:end].replace("y + ", "y + 1 + ") + text[end:])
    return chosen


CONFIG = """
[run]
out = "run"
cache_dir = "cache"

[[sources]]
path = "corpus"
lang = "rust"

[models.local]
provider = "openai"
model = "scripted-local"
base_url = "{base_url}"
free = true

[lanes.repair]
enabled = true

[lanes.backtranslate]
enabled = true
model = "local"
workers = 4

[lanes.rft]
enabled = true
model = "local"
k = 2

[lanes.toolcalls]
enabled = true
model = "local"
tools = "tools.json"
per_tool = 1
k = 4
"""


def _work(summary) -> dict:
    return {"llm_calls": summary.llm_calls, "compiler_candidates": summary.candidates_compiled,
            "compiler_runs": summary.compiler_runs, "diff": summary.diff["total"],
            "processed": {k: v["processed"] for k, v in summary.lanes.items()}}


def run_refresh_bench(n: int = 300, changed_share: float = 0.01, seed: int = 0) -> dict:
    from benchmarks.fixtures.llm_server import FakeLLMServer
    from benchmarks.fixtures.scripted_llm import stage_responder
    from synth.settings.config import load_config
    from synth.lanes import LANES
    from synth.extract import extract_paths
    from synth.pipeline.run import run_pipeline

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = write_functions(root / "corpus", n, seed)
        shutil.copy(REPO / "examples" / "mcp" / "tools.json", root / "tools.json")
        decls = extract_paths([root / "corpus"]).declarations
        with FakeLLMServer(responder=stage_responder(decls)) as server:
            (root / "synth.toml").write_text(CONFIG.format(base_url=server.base_url + "/v1"))
            config = load_config(root / "synth.toml", LANES)
            cold = _work(run_pipeline(config))
            unchanged = _work(run_pipeline(config))
            count = max(1, round(n * changed_share))
            changed_names = change_functions(root / "corpus", names, count, seed)
            changed = _work(run_pipeline(config))

    def ratio(key):
        return round(changed[key] / cold[key], 4) if cold[key] else None
    return {"declarations": n, "changed": len(changed_names), "changed_share": round(len(changed_names) / n, 4),
            "cold": cold, "unchanged": unchanged, "changed_run": changed,
            "ratio_llm_calls": ratio("llm_calls"), "ratio_compiler_work": ratio("compiler_candidates"),
            "unchanged_zero": unchanged["llm_calls"] == 0 and unchanged["compiler_runs"] == 0
            and unchanged["compiler_candidates"] == 0 and not any(unchanged["diff"].values()),
            "identical": True}


def bench(args) -> dict:
    """`synth bench refresh`."""
    return run_refresh_bench(n=args.n if args.n != 500 else 300, seed=args.seed)
