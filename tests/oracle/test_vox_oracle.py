"""Vox oracle, run against tests/stubs/vox: a stub that mimics the documented `vox` output
(../shared/vox/VOX.md). The real check needs the user's `vox` binary."""
import subprocess
import sys

import pytest
from conftest import ROOT, STUB_VOX

from oracles.errors import ToolchainMissing
from oracles.verdict import Candidate
from oracles.vox.oracle import VoxOracle, parse_vox_diagnostics
from oracles.settings import OracleSettings


@pytest.fixture()
def vox():
    return VoxOracle(OracleSettings(vox=str(STUB_VOX)))


def test_examples_pass_and_broken_code_fails_with_positions(vox):
    good = [Candidate.of(p.read_text()) for p in sorted((ROOT / "examples" / "vox").glob("*.vox"))]
    assert len(good) >= 3 and all(v.passed for v in vox.check(good))
    broken = Candidate.of("fn f(x: int) -> int {\n    return Err(\"no\")\n}\n")
    (verdict,) = vox.check([broken])
    assert not verdict.passed and verdict.oracle == "vox" and "stub" in verdict.toolchain
    found = {(d.code, d.line, d.column) for d in verdict.errors}
    assert ("vox/syntax/retired-form", 1, 12) in found
    assert ("vox/types/unknown-constructor", 2, 12) in found


def test_warnings_do_not_fail(vox):
    (verdict,) = vox.check([Candidate.of("fn f(a: bool, b: bool) to bool {\n    return a && b\n}\n")])
    assert verdict.passed and [d.severity for d in verdict.diagnostics] == ["warning"]


def test_missing_binary_is_a_clear_error_never_a_pass(tmp_path):
    with pytest.raises(ToolchainMissing, match=r"\[oracles\] vox"):
        VoxOracle(OracleSettings(vox=str(tmp_path / "no-vox-here")))
    cli = subprocess.run([sys.executable, "-m", "synth.cli.main", "check", "--vox", str(tmp_path / "nope"),
                          str(ROOT / "examples/vox/numbers.vox")], capture_output=True, text=True, cwd=ROOT)
    assert cli.returncode == 2 and "[oracles] vox" in cli.stderr


def test_unparseable_output_is_a_failure(tmp_path):
    fake = tmp_path / "vox"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'vox 9'; exit 0; fi\necho 'all good!'\nexit 0\n")
    fake.chmod(0o755)
    (verdict,) = VoxOracle(OracleSettings(vox=str(fake))).check([Candidate.of("fn f() to Unit {}\n")])
    assert not verdict.passed and verdict.diagnostics[0].code == "vox-output"


def test_for_llm_envelope_and_stderr_diagnostics():
    envelope = ('{"envelope_version": 1, "file_path": "a.vox", "ok": false, "error_count": 1, "warning_count": 0,'
                ' "diagnostics": [{"error_code": "vox/types/type-mismatch", "severity": "Error", "message": "m",'
                ' "span": {"start_line": 3, "start_col": 4, "end_line": 3, "end_col": 9},'
                ' "expected_type": "int", "found_type": "str"}]}\nCheck failed with 1 error(s)')
    (d,) = parse_vox_diagnostics("", envelope)
    assert (d.code, d.severity, d.line, d.column) == ("vox/types/type-mismatch", "error", 3, 4)
    assert d.notes == ["expected `int`, found `str`"]
    assert parse_vox_diagnostics("[]\n", "") == []


def test_vox_test_runs_tests(vox):
    text = (ROOT / "examples/vox/numbers.vox").read_text()
    (ok,) = vox.test([Candidate.of(text)])
    assert ok.passed and ok.tests.total == 1
    (bad,) = vox.test([Candidate.of(text + "\n@test\nfn broken() to Unit {\n    assert(false)\n}\n")])
    assert not bad.passed and bad.tests.failed == 1


def test_fixture_run_guards(vox):
    fixture = 'fn main() to str {\n    assert(add(2, 3) is 5)\n    return "ok"\n}\n'
    good = Candidate.of("fn add(a: int, b: int) to int {\n    return a + b\n}\n")
    assert vox.run_with_fixture(good, fixture).passed
    cheat = Candidate.of("fn add(a: int, b: int) to int {\n    return 5\n}\n\nfn assert(x: bool) to Unit {\n}\n")
    verdict = vox.run_with_fixture(cheat, fixture)
    assert not verdict.passed and verdict.diagnostics[0].code == "reserved-name"
    assert not vox.run_with_fixture(good, 'fn main() to str {\n    assert(1 is 2)\n    return "ok"\n}\n').passed


def test_fixture_run_refuses_a_runner_that_cannot_fail(tmp_path):
    from oracles.vox.oracle import VoxOutputError
    lenient = tmp_path / "vox"
    lenient.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'vox 9'; fi\nexit 0\n")
    lenient.chmod(0o755)
    with pytest.raises(VoxOutputError, match="canary"):
        VoxOracle(OracleSettings(vox=str(lenient))).run_with_fixture(Candidate.of("fn f() to int {\n    return 1\n}\n"), "")
