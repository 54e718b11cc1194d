import json

import pytest
from pydantic import ValidationError

from oracles.verdict import Diagnostic, Verdict
from synth.rows.jsonl import read_jsonl, write_jsonl
from synth.rows.row import Provenance, Row, make_row

VERDICT = Verdict(candidate_id="c", passed=True, oracle="rustc", toolchain="rustc 1.95.0")
PROV = Provenance(source_path="src/a.rs", decl_hash="abc", stage="test", seed=0)


def _row(**kw):
    base = dict(lang="rust", lane="rust_codegen", task="codegen", prompt="Write f.", response="fn f() {}",
                verdict=VERDICT, provenance=PROV, checked_source="fn f() {}")
    base.update(kw)
    return make_row(**base)


def test_row_has_contract_fields_and_stable_id():
    row = _row(system="You write Rust.")
    data = json.loads(row.model_dump_json())
    for field in ("id", "lang", "lane", "task", "messages", "prompt", "response", "verification", "provenance",
                  "cost_usd", "mix_weight", "schema_version", "checked_source"):
        assert field in data
    assert data["verification"]["oracle"] == "rustc" and data["messages"][0]["role"] == "system"
    assert row.id == _row(system="You write Rust.").id and row.id != _row(response="fn g() {}").id


def test_rows_refuse_inconsistent_content():
    with pytest.raises(ValidationError, match="checked_source"):
        _row(checked_source=None)
    with pytest.raises(ValidationError, match="checked_broken_source"):
        _row(task="repair")
    with pytest.raises(ValidationError, match="prompt/response"):
        Row(lang="rust", lane="l", task="codegen", messages=[{"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}], prompt="other", response="b",
            verification={"oracle": "rustc", "toolchain": "t", "passed": True}, provenance=PROV, checked_source="b")


def test_jsonl_writer_is_atomic(tmp_path):
    path = tmp_path / "rows.jsonl"
    assert write_jsonl(path, [_row(), _row(response="fn g() {}", checked_source="fn g() {}")]) == 2
    before = path.read_bytes()

    def exploding():
        yield _row()
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        write_jsonl(path, exploding())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]  # no temp file left behind
    assert [r.response for r in read_jsonl(path, Row)] == ["fn f() {}", "fn g() {}"]


def test_read_jsonl_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_jsonl(path)


def test_diagnostic_render():
    d = Diagnostic(code="E0308", severity="error", message="mismatched types", line=2, column=5, label="expected `u8`")
    assert d.render() == "error[E0308]: mismatched types at 2:5 (expected `u8`)"
