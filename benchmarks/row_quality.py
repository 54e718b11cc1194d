"""Row quality on real crates: the counts a run's rows must hold to (issue 18), as plain functions
for `synth bench crates` to print. Rows are the dicts of a run's rows/*.jsonl.zst.

    python -m benchmarks.row_quality RUN_DIR CRATE_DIR... [--check]
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from synth.extract.corpus import collect, split_test_code
from synth.rows.rowfile import read_rows, row_files
from synth.extract.rust.owner import owner_header

# A suggestion said twice (`X`: `X`), or a rustc message ending in ":" followed by our own ": ".
REPEATED_HELP = re.compile(r"(`[^`\n]+`): \1|:: `")
SANDBOX_MARK = "synth-sbx-"


def test_code_paths(crate_dirs: list[Path]) -> set[str]:
    """Paths of the crates' test and example code, as a run over the same crate folders records them."""
    corpus = collect(crate_dirs, include_tests=True, langs={"rust"})
    return {f.rel for f in split_test_code(corpus.files)[1]}


def row_counts(rows: list[dict], crate_dirs: list[Path]) -> dict:
    ids = Counter(r["id"] for r in rows)
    tests = test_code_paths(crate_dirs)
    methods = [r for r in rows if r.get("wrapper_head")]
    headless = [r["id"] for r in methods
                if (owner_header(r["wrapper_head"], r.get("wrapper_tail", "")) or "\0") not in r["prompt"]]
    return {
        "rows": len(rows),
        "unique_ids": len(ids),
        "duplicate_ids": sum(n - 1 for n in ids.values()),
        "from_test_code": sum(r["provenance"]["source_path"] in tests for r in rows),
        "method_rows": len(methods),
        "method_rows_without_impl_header": len(headless),
        "prompts_repeating_help": sum(bool(REPEATED_HELP.search(r["prompt"])) for r in rows),
    }


def crate_check_counts(crate_dirs: list[Path], oracle=None) -> dict:
    """`synth check` on each crate folder: passed, or failed with a message naming no temp path."""
    from oracles.cargo.oracle import CargoOracle
    from oracles.verdict import Splice

    oracle = oracle or CargoOracle()
    failures, temp_named = [], []
    for crate in crate_dirs:
        lib = "src/lib.rs" if (crate / "src/lib.rs").exists() else "src/main.rs"
        try:
            verdict = oracle.check([Splice(str(crate), lib, 0, 0, "")])[0]
        except Exception as exc:  # a crash is a failure too, and says what it was
            verdict, text = None, f"crashed: {type(exc).__name__}: {exc}"
        if verdict is not None and verdict.passed:
            continue
        if verdict is not None:
            text = "\n".join(d.render() for d in verdict.errors)
        failures.append({"crate": str(crate), "first_error": text.splitlines()[0] if text else "(no error text)"})
        if SANDBOX_MARK in text or re.search(re.escape(tempfile.gettempdir()) + r"/tmp\w{8}", text):
            temp_named.append(str(crate))
    return {"crates": len(crate_dirs), "passed": len(crate_dirs) - len(failures), "failed": len(failures),
            "failed_naming_temp_path": len(temp_named), "failures": failures}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    run_dir, *crates = [a for a in argv if a != "--check"]
    rows = [row for path in row_files(Path(run_dir) / "rows") for row in read_rows(path)]
    crate_dirs = [Path(c).resolve() for c in crates]
    out = {"rows": row_counts(rows, crate_dirs)}
    if check:
        out["crate_check"] = crate_check_counts(crate_dirs)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
