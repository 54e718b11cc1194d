"""A defect met in one crate does not end the night: the repair lane's part is done again crate by
crate, the crate that fails is left undone and named, every other crate's rows are written, and
the next run does only that crate."""
import json
from pathlib import Path

import pytest

import synth.mutate.repair as repair
from synth.cli.main import main

CRATES = [Path("/usr/share/cargo/registry/adler-1.0.2"), Path("/usr/share/cargo/registry/itoa-1.0.1")]
BAD = "itoa-1.0.1"

pytestmark = pytest.mark.skipif(not all(c.is_dir() for c in CRATES), reason="the pinned corpus is not installed (make corpus)")


def _run(config: Path) -> tuple[int, dict]:
    code = main(["run", "--config", str(config)])
    return code, json.loads((config.parent / "run" / "stats" / "run.json").read_text())["summary"]


def test_a_crate_the_repair_lane_fails_on_is_left_undone_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    sources = "".join(f'[[sources]]\npath = "{c}"\nlang = "rust"\n\n' for c in CRATES)
    config = tmp_path / "synth.toml"
    config.write_text(f'[run]\nout = "run"\ncache_dir = "cache"\nseed = 0\n\n{sources}'
                      '[lanes.repair]\nenabled = true\nin_crate = "fallback"\n')
    made = repair.build_rows

    def build_rows(killed, *args, **kwargs):  # a defect that only this crate's declarations meet
        if any(BAD in (m.decl.crate_root or "") for m in killed):
            raise IndexError("list index out of range")
        return made(killed, *args, **kwargs)

    monkeypatch.setattr(repair, "build_rows", build_rows)
    code, summary = _run(config)
    lane = summary["stages"]["repair"]
    assert code == 1  # a person must look
    assert [n for n in summary["attention"] if BAD in n and "IndexError" in n and "test_lane_failure.py" in n], summary["attention"]
    assert lane["undone"] > 0 and lane["rows"] > 0
    assert {c for c, figures in lane["mix"]["by_crate"].items() if figures["rows"]} == {"adler-1.0.2"}

    monkeypatch.setattr(repair, "build_rows", made)  # the defect mended: the next run does that crate alone
    code, again = _run(config)
    lane_again = again["stages"]["repair"]
    assert code == 0 and not again["attention"], again["attention"]
    assert lane_again["processed"] == lane["undone"] and lane_again["reused"] == lane["processed"] - lane["undone"]
    assert {c for c, figures in lane_again["mix"]["by_crate"].items() if figures["rows"]} == {"adler-1.0.2", BAD}
    capsys.readouterr()


def test_a_part_of_one_crate_that_fails_is_not_done_twice(tmp_path, monkeypatch, capsys):
    config = tmp_path / "synth.toml"
    config.write_text(f'[run]\nout = "run"\ncache_dir = "cache"\nseed = 0\n\n[[sources]]\npath = "{CRATES[1]}"\n'
                      'lang = "rust"\n\n[lanes.repair]\nenabled = true\nin_crate = "fallback"\n')
    calls = []

    def build_rows(killed, *args, **kwargs):
        calls.append(len(killed))
        raise IndexError("list index out of range")

    monkeypatch.setattr(repair, "build_rows", build_rows)
    code, summary = _run(config)
    assert code == 1 and len(calls) == 1, calls
    assert [n for n in summary["attention"] if BAD in n and "IndexError" in n], summary["attention"]
    assert summary["stages"]["repair"]["undone"] == summary["stages"]["repair"]["processed"] > 0
    capsys.readouterr()
