"""A lane's fingerprint is derived from what it runs: an edit to the code that writes a lane's rows
makes `synth refresh` redo that lane's items (not reuse the old rows), and leaves other lanes'."""
import pytest
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE_CRATE, ROOT

from synth.lanes.fingerprint import project_modules, source_fingerprint
from synth.rows.rowfile import read_rows

CONFIG = """
[run]
out = "run"
cache_dir = "cache"
seed = 0

[[sources]]
path = "crate"
lang = "rust"

[lanes.repair]
enabled = true

[lanes.doclane]
enabled = true
"""


def _refresh(code: Path, workspace: Path) -> dict:
    """`synth refresh` run from the copy of the code at `code` (it comes first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, "-c", "import sys; from synth.cli.main import main; sys.exit(main(sys.argv[1:]))",
                           "refresh", "--config", str(workspace / "synth.toml"), "--json"],
                          cwd=code, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_walk_finds_what_a_lane_runs_and_not_the_other_lanes():
    doc = project_modules("synth.lanes.doclane")
    assert {"synth.lanes.doclane", "synth.lanes.base", "synth.doctasks.documented", "synth.rows.row",
            "oracles.verdict"} <= set(doc)
    assert not {"synth.lanes", "synth.lanes.repair", "synth.cli.main"} & set(doc)  # not the registry, nor the CLI
    assert "synth.mutate.operators.rust" in project_modules("synth.lanes.repair")
    assert source_fingerprint("synth.lanes.doclane") != source_fingerprint("synth.lanes.repair")


@pytest.mark.slow
def test_editing_the_doc_lanes_row_code_makes_refresh_redo_its_items(tmp_path):
    code = tmp_path / "code"
    for package in ("synth", "oracles", "training", "prompts"):
        shutil.copytree(ROOT / package, code / package, ignore=shutil.ignore_patterns("__pycache__"))
    workspace = tmp_path / "work"
    shutil.copytree(EXAMPLE_CRATE, workspace / "crate", ignore=shutil.ignore_patterns("target"))
    (workspace / "synth.toml").write_text(CONFIG)

    cold = _refresh(code, workspace)
    items = cold["stages"]["doclane"]["items"]
    assert items > 0 and cold["stages"]["doclane"]["processed"] == items
    again = _refresh(code, workspace)
    assert {name: s["processed"] for name, s in again["stages"].items()} == {"repair": 0, "doclane": 0}

    documented = code / "synth" / "doctasks" / "documented.py"
    text = documented.read_text()
    assert "Write the Rust function" in text
    documented.write_text(text.replace("Write the Rust function", "Implement the Rust function"))
    edited = _refresh(code, workspace)
    assert edited["stages"]["doclane"]["processed"] == items  # every doc item again, none reused
    assert edited["stages"]["repair"]["processed"] == 0  # the repair lane does not run that module
    rows = json.dumps(read_rows(workspace / "run" / "rows" / "codegen.jsonl.zst"))
    assert "Implement the Rust function" in rows and "Write the Rust function" not in rows
