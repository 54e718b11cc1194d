"""Repair rows from AST mutants: rejected by rustc, fixed by the original, balanced, reproducible."""
import difflib
import json
import random
import subprocess
import sys
from collections import Counter

import pytest
from conftest import EXAMPLE_CRATE, ROOT

from benchmarks.fixtures.rust_corpus import write_corpus
from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from oracles.verdict import Candidate
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.rows.jsonl import read_jsonl
from synth.rows.rowfile import read_rows
from synth.mutate.repair import RepairSettings, balance, repair_rows
from synth.mutate.operators.rust import RUST_OPERATORS, apply, rust_sites
from synth.rows.row import Row


@pytest.fixture(scope="module")
def corpus_decls(tmp_path_factory):
    generated = tmp_path_factory.mktemp("gen")
    write_corpus(generated, 20_000)  # one generated crate: the examples plus awkward-but-valid Rust
    decls = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
    return decls + extract_paths([generated / "crate_00000" / "src" / "tricky.rs"], ExtractOptions(jobs=1)).declarations


@pytest.fixture(scope="module")
def repair(corpus_decls):
    return repair_rows(corpus_decls, RustOracle(OracleSettings(jobs=2)), RepairSettings(), 0)


def test_operators_are_distinct_and_many():
    assert len(RUST_OPERATORS) >= 10 and len({op.name for op in RUST_OPERATORS}) == len(RUST_OPERATORS)


def test_kept_rows_cover_many_codes_and_no_operator_dominates(repair):
    rows = repair.rows
    codes = {c for r in rows for c in r.diagnostic_codes if c.startswith("E")}
    print(f"{len(rows)} rows, {len(codes)} distinct rustc error codes: {sorted(codes)}")
    assert len(codes) >= 10
    ops = Counter(r.operator for r in rows)
    primary = Counter(r.primary_code for r in rows)
    assert max(ops.values()) <= 0.25 * len(rows) and max(primary.values()) <= 0.25 * len(rows)
    assert len(ops) >= 10  # at least ten operators actually produced rows
    table = {t["operator"]: t for t in repair.table()}
    assert all(t["killed"] + t["equivalent"] + t["duplicate"] <= t["applicable"] for t in table.values())
    assert sum(t["kept"] for t in table.values()) == len(rows)


def test_every_row_rechecks_independently(repair):
    """context + broken must fail and context + fixed must pass, checked again from the row alone."""
    rows = repair.rows
    fresh = RustOracle(OracleSettings(jobs=2))  # no cache, nothing shared with the stage
    broken = fresh.check([Candidate.of(r.checked_broken_source) for r in rows])
    fixed = fresh.check([Candidate.of(r.checked_source) for r in rows])
    disagreements = [r.id for r, b, f in zip(rows, broken, fixed) if b.passed or not f.passed]
    assert disagreements == []
    for r in random.Random(1).sample(rows, 12):  # and a sample one rustc call each, no batching at all
        assert not fresh.check_solo(Candidate.of(r.checked_broken_source)).passed
        assert fresh.check_solo(Candidate.of(r.checked_source)).passed
    for r in rows:  # the row carries what is needed to rebuild what was checked
        assert r.checked_broken_source == r.context + r.wrapper_head + r.broken + "\n" + (
            r.wrapper_tail + "\n" if r.wrapper_head else "")
        assert r.fixed == r.response and r.broken != r.fixed
        assert r.broken not in r.prompt.split("The compiler says:")[1]  # the answer is not in the prompt
        assert r.fixed.strip() not in r.prompt


def test_prompt_carries_the_real_diagnostic(repair):
    row = next(r for r in repair.rows if r.operator == "argument_count")
    assert row.diagnostic_codes == ["E0061"] or "E0061" in row.diagnostic_codes
    assert "error[E0061]: this function takes" in row.prompt and "--> line " in row.prompt
    assert row.broken_verification["passed"] is False and row.verification.passed is True
    # Nothing of the batch the oracle compiled in (its `__synth_cN` modules) reaches a row: 6 of
    # 239 example rows once said `method not found in &mut __synth_c91::Inventory`.
    assert not [r.id for r in repair.rows if "__synth" in r.model_dump_json()]


def test_diff_mode_applies_with_patch(corpus_decls, tmp_path):
    result = repair_rows(corpus_decls[:30], RustOracle(OracleSettings(jobs=2)), RepairSettings(diff=True), 0)
    assert result.rows
    for i, row in enumerate(result.rows):
        broken = tmp_path / f"broken_{i}.rs"
        broken.write_text(row.broken + ("" if row.broken.endswith("\n") else "\n"))
        (tmp_path / f"fix_{i}.diff").write_text(row.response)
        done = subprocess.run(["patch", "--quiet", "-o", str(tmp_path / f"out_{i}.rs"), str(broken),
                               str(tmp_path / f"fix_{i}.diff")], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tmp_path / f"out_{i}.rs").read_text().rstrip("\n") == row.fixed.rstrip("\n")
        assert row.answer_format == "diff" and row.response.startswith("--- a/")


def test_balance_caps_every_operator_and_code(repair):
    kept, dropped = balance(repair.rows, 0.12, seed=3)
    ops, codes = Counter(r.operator for r in kept), Counter(r.primary_code for r in kept)
    assert max(ops.values()) <= max(1, int(0.12 * len(kept))) and max(codes.values()) <= max(1, int(0.12 * len(kept)))
    assert len(kept) + len(dropped) == len(repair.rows) and dropped


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    def run(seed, out):
        done = subprocess.run([sys.executable, "-m", "synth.cli.main", "mutate", str(EXAMPLE_CRATE), "--out", str(out),
                               "--seed", str(seed), "--json", "--cache-dir", str(tmp_path / "cache")],
                              capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), (out / "rows" / "repair.jsonl.zst").read_bytes()

    summary, first = run(0, tmp_path / "a")
    _, second = run(0, tmp_path / "b")
    _, other = run(5, tmp_path / "c")
    assert first == second and first != other
    assert summary["stages"]["repair"]["rows"] == len(read_rows(tmp_path / "a" / "rows" / "repair.jsonl.zst", Row)) > 0
    rejected = read_jsonl(tmp_path / "a" / "rejected" / "repair.jsonl")
    assert all(r["reason"] and r["kind"] for r in rejected)
    assert {r["kind"] for r in rejected} <= {"equivalent mutant", "original does not compile", "no diagnostic",
                                             "balance: share"}


def test_every_operator_edit_keeps_the_code_parseable():
    text = (EXAMPLE_CRATE / "src" / "parse.rs").read_text()
    from synth.rust_syntax import rust_parser as _parser
    for op in RUST_OPERATORS:
        for edit in rust_sites(text, op):
            assert not _parser().parse(apply(text, edit).encode()).root_node.has_error, op.name



def test_the_sites_kept_are_exactly_those_a_fresh_parse_keeps():
    """rust_sites reparses each mutated text from the declaration's tree (tree-sitter's
    incremental parse); the edits it keeps must be those a parse from scratch keeps."""
    from synth.rust_syntax import rust_parser as _parser
    decls = extract_paths([str(EXAMPLE_CRATE)], ExtractOptions(jobs=1)).declarations
    texts = [d.text for d in decls] + ["fn f(v: Vec<u8>) -> usize { let n = v.len(); n }"]
    kept = dropped = 0
    for text in texts:
        data = text.encode()
        root = _parser().parse(data).root_node
        for op in RUST_OPERATORS:
            if root.has_error:
                continue
            fresh = [e for e in op.sites(root, data)
                     if apply(text, e) != text and not _parser().parse(apply(text, e).encode()).root_node.has_error]
            assert rust_sites(text, op) == fresh, op.name
            kept += len(fresh)
            dropped += len(op.sites(root, data)) - len(fresh)
    assert kept >= 50 and dropped >= 1  # some edits are refused: the comparison covers both answers


# -- Vox, against tests/stubs/vox (a stub of `vox check`; the real compiler rejects more) ----------

from conftest import STUB_VOX  # noqa: E402

from oracles.vox.oracle import VoxOracle  # noqa: E402
from synth.mutate.operators.vox import VOX_OPERATORS, vox_apply, vox_sites  # noqa: E402

VOX_EXPECTED = {"undefined_name": "vox/names/undefined", "wrong_arity": "vox/types/arity",
                "wrong_return_type": "vox/types/type-mismatch", "constructor_confusion": "vox/types/unknown-constructor",
                "non_exhaustive_match": "vox/match/non-exhaustive", "retired_syntax": "vox/syntax/retired-form"}


@pytest.fixture(scope="module")
def vox_oracle():
    return VoxOracle(OracleSettings(vox=str(STUB_VOX), jobs=2))


def test_each_vox_operator_provokes_its_error(vox_oracle):
    decl = (
        "/// Total of the positive values, or an error for an empty list.\n"
        "fn positive_total(xs: list[int], limit: int) to Result[int] {\n"
        "    if len(xs) is 0 {\n        return Error(\"empty\")\n    }\n"
        "    let n = helper(xs, limit)\n"
        "    match classify(n) {\n        Small(v) => log.info(\"small\")\n        Large(v) => log.info(\"large\")\n    }\n"
        "    return Ok(n)\n}\n"
    )
    context = ("type Size =\n    | Small(v: int)\n    | Large(v: int)\n\n"
               "fn helper(xs: list[int], limit: int) to int {\n    return limit\n}\n\n"
               "fn classify(n: int) to Size {\n    return Small(n)\n}\n\n"
               "fn label() to int {\n    return 3\n}\n\n")
    assert vox_oracle.check([Candidate.of(context + decl)])[0].passed
    literal = "fn label() to int {\n    return 3\n}\n"
    for op in VOX_OPERATORS:
        text = literal if op.name == "wrong_return_type" else decl
        sites = vox_sites(text, op)
        assert sites, op.name
        verdicts = vox_oracle.check([Candidate.of(context.replace(literal, "") + vox_apply(text, e)) for e in sites])
        codes = {d.code for v in verdicts for d in v.errors}
        assert VOX_EXPECTED[op.name] in codes, (op.name, codes)


def test_vox_repair_rows_recheck_and_cap_retired_forms(vox_oracle):
    decls = extract_paths([ROOT / "examples" / "vox"], ExtractOptions(jobs=1)).declarations
    result = repair_rows(decls, vox_oracle, RepairSettings(), 0, lang="vox")
    rows = result.rows
    assert len({r.operator for r in rows}) >= 4
    assert sum(r.operator == "retired_syntax" for r in rows) <= 0.1 * len(rows) + 1e-9
    table = {t["operator"]: t for t in result.table()}
    assert table["retired_syntax"]["killed"] > table["retired_syntax"]["kept"]  # capped, not absent by chance
    broken = vox_oracle.check([Candidate.of(r.checked_broken_source) for r in rows])
    fixed = vox_oracle.check([Candidate.of(r.checked_source) for r in rows])
    assert all(not b.passed for b in broken) and all(f.passed for f in fixed)
    assert all(r.lane == "vox_repair" and r.lang == "vox" for r in rows)


# -- Operators whose fix the diagnostic does not spell out: each against the real rustc -----------

OPS = {op.name: op for op in RUST_OPERATORS}
# operator -> (context, declaration, the code its mutants must provoke)
AIMED = {
    "removed_match_arm": ("enum Shape { Circle(f64), Square(f64), Empty }\n",
                          "fn area(s: &Shape) -> f64 {\n    match s {\n        Shape::Circle(r) => 3.0 * r * r,\n"
                          "        Shape::Square(w) => w * w,\n        Shape::Empty => 0.0,\n    }\n}", "E0004"),
    "generic_argument_count": ("use std::collections::HashMap;\n",
                               "fn count(words: &[&str]) -> HashMap<String, usize> {\n    let mut m = HashMap::new();\n"
                               "    for w in words {\n        *m.entry(w.to_string()).or_insert(0) += 1;\n    }\n"
                               "    m\n}",
                               "E0107"),
    "missing_lifetime": ("", "fn longest<'a>(x: &'a str, y: &'a str) -> &'a str {\n"
                             "    if x.len() > y.len() { x } else { y }\n}", "E0106"),
    "dropped_clone": ("fn consume(v: Vec<u8>) -> usize { v.len() }\n",
                      "fn twice(v: Vec<u8>) -> usize {\n    let n = consume(v.clone());\n    n + v.len()\n}", "E0382"),
    "argument_from_context": ("fn repeat(s: &str, n: usize) -> String { s.repeat(n) }\n",
                              "fn banner(title: &str, width: usize) -> String {\n    repeat(title, width)\n}", "E0308"),
    "return_type_mismatch": ("", "fn scaled(x: f64, n: u8) -> u32 {\n    (x * n as f64) as u32\n}", "E0308"),
}
# (operator, a declaration where it must find no site): why, in the comment
NO_SITE = [
    ("removed_match_arm", "fn f(x: Option<u8>) -> u8 { match x { Some(0) => 1, Some(n) => n, _ => 0 } }"),  # `_` stays
    # aliases of one argument, and a type of one
    ("generic_argument_count", "fn f(r: std::io::Result<u8>, s: fmt::Result<u8, u8>, v: Vec<u8>) {}"),
    ("missing_lifetime", "fn f<'a>(&self, y: &'a str, z: &str) -> &'a str { y }"),  # elision picks `&self`'s lifetime
    ("missing_lifetime", "fn f<'a>(y: &'a str, n: usize) -> &'a str { &y[n..] }"),  # ... or the one borrowed input's
    ("dropped_clone", "fn f(v: Vec<u8>) -> usize { let n = v.clone().len(); g(self.v.clone()); n }"),  # nothing moves
    ("argument_from_context", "fn f(a: u8) -> u8 { { let inner = 1; } let b = g(a); b }"),  # nothing else in scope at `a`
    ("two_errors", "fn f() -> u8 { 1 }"),  # one operator applies (return_type_mismatch), not two
]


def _codes(oracle, context, texts):
    verdicts = oracle.check([Candidate.of(context + t + "\n") for t in texts])
    return [(v.passed, {d.code for d in v.errors}) for v in verdicts]


@pytest.mark.parametrize("name", sorted(AIMED))
def test_operator_provokes_the_error_it_aims_at(name, rust_oracle):
    context, decl, code = AIMED[name]
    sites = rust_sites(decl, OPS[name])
    assert sites, name
    (passed, _), *broken = _codes(rust_oracle, context, [decl] + [apply(decl, e) for e in sites])
    assert passed  # the original compiles: the mutant's error is the operator's
    assert all(not ok and code in codes for ok, codes in broken), broken


@pytest.mark.parametrize("name, decl", NO_SITE, ids=[name for name, _ in NO_SITE])
def test_operator_finds_no_site_where_its_error_cannot_arise(name, decl):
    assert rust_sites(decl, OPS[name]) == []


def test_return_type_mismatch_picks_types_the_declaration_uses():
    decl = "fn f<T: Clone>(x: T, m: HashMap<String, u32>, r: &[u16]) -> u32 { let n: i64 = g::<u8>(); 1 }"
    # not `u32` (the return type), `T` (a generic), `HashMap` alone, `Clone` (a trait) or anything holding `u32`
    assert [e.replacement for e in rust_sites(decl, OPS["return_type_mismatch"])] == ["String", "i64", "u16", "u8"]
    assert [e.replacement for e in rust_sites("fn f(v: Vec<u8>) -> u8 { 1 }", OPS["return_type_mismatch"])] == ["bool"]
    # a body's own items are out of scope at the signature: neither their types nor the item's name
    nested = ("fn f(n: u8) -> u32 {\n    struct Visitor;\n    impl Visitor {\n"
              "        fn go(&self, s: String) -> i64 { 1 }\n"
              "    }\n    let v: Visitor = Visitor;\n    1\n}")
    assert [e.replacement for e in rust_sites(nested, OPS["return_type_mismatch"])] == ["u8"]


def test_two_errors_is_one_edit_holding_two_operators_errors(rust_oracle):
    context = "fn total(v: &[u32]) -> u32 { v.iter().sum() }\n"
    decl = "fn report(v: Vec<u32>, k: usize) -> u32 {\n    let t = total(&v);\n    t + v.len() as u32 + k as u32\n}"
    sites = rust_sites(decl, OPS["two_errors"])
    assert 1 < len(sites) <= 4
    (passed, _), *broken = _codes(rust_oracle, context, [decl] + [apply(decl, e) for e in sites])
    assert passed and all(not ok and codes for ok, codes in broken), broken
    # rustc reports both where they are of one phase; a borrow error waits behind a type error (E0061 hides E0382)
    assert sum(len(codes) == 2 for _, codes in broken) >= len(broken) - 1, broken
    # each is two edits apart, the text between them kept: the broken text differs from the original twice
    for e in sites:
        mutated = apply(decl, e)
        changed = [op for op in difflib.SequenceMatcher(None, decl, mutated).get_opcodes() if op[0] != "equal"]
        assert len(changed) == 2, mutated
