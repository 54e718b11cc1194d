"""Rows from real code: each test builds code shaped like the public crates where the
defect showed, and runs it through the real extractor, rustc, cargo and the CLI."""
import json
import os
import re
import subprocess
import sys
from collections import Counter

from conftest import ROOT

from oracles.verdict import Candidate, Verdict
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.model import Declaration, standalone_source
from synth.rust_syntax import rust_parser
from synth.extract.vox import parse_vox
from synth.mutate.repair import answer_offset
from synth.tasks.diagnostics import render_diagnostics
from synth.mutate.repair import RepairSettings, balance, repair_rows
from synth.pipeline.mutate import repair_only
from synth.pipeline.run import run_pipeline
from synth.rows.row import Provenance, make_row


def write(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "synth.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, timeout=300)


CARGO = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'
PRINTER = """pub struct PrinterBuilder {
    indent: usize,
}

impl Default for PrinterBuilder {
    fn default() -> PrinterBuilder {
        PrinterBuilder { indent: 4 }
    }
}
"""


def test_identical_blocks_in_two_files_get_two_row_ids(tmp_path, rust_oracle):
    crate = write(tmp_path / "printer", {
        "Cargo.toml": CARGO.format(name="printer"), "src/lib.rs": "pub mod ast;\npub mod hir;\n",
        "src/ast.rs": "pub mod print;\n", "src/hir.rs": "pub mod print;\n",
        "src/ast/print.rs": PRINTER, "src/hir/print.rs": PRINTER})
    decls = extract_paths([crate], ExtractOptions(jobs=1)).declarations
    first = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0), 0).rows
    again = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0), 0).rows
    assert {r.provenance.source_path for r in first} == {"src/ast/print.rs", "src/hir/print.rs"}
    ids = [r.id for r in first]
    assert len(ids) == len(set(ids)) >= 4, Counter(ids).most_common(2)
    assert ids == [r.id for r in again]  # stable across runs
    # two versions of one crate scanned together (the Debian registry holds such pairs)
    versions = [write(tmp_path / f"printer-1.0.{v}", {"Cargo.toml": CARGO.format(name="printer"), "src/lib.rs": PRINTER})
                for v in (0, 1)]
    rows = repair_rows(extract_paths(versions, ExtractOptions(jobs=1)).declarations, rust_oracle,
                       RepairSettings(max_share=1.0), 0).rows
    assert len({r.id for r in rows}) == len(rows) and len({r.provenance.source_path for r in rows}) == 2


def test_test_modules_and_test_folders_are_left_out(tmp_path):
    crate = write(tmp_path / "parser", {
        "Cargo.toml": CARGO.format(name="parser"),
        "src/lib.rs": "pub fn parse() -> u8 { 1 }\n\n#[cfg(test)]\nmod tests;\n",
        "src/tests/mod.rs": "mod helpers;\n#[test]\nfn t() {}\n",
        "src/tests/helpers.rs": "pub fn helper() -> u8 { 2 }\n",
        "tests/it.rs": "fn integration() {}\n", "benches/b.rs": "fn bench() {}\n",
        "examples/e.rs": "fn main() {}\n"})
    default = extract_paths([crate], ExtractOptions(jobs=1))
    assert [d.name for d in default.declarations] == ["parse"]
    assert default.summary()["skipped_by_reason"]["test or example code"] == 5
    kept = {d.name: d for d in extract_paths([crate], ExtractOptions(jobs=1, include_tests=True)).declarations}
    assert {"helper", "integration", "bench", "main"} <= set(kept)
    # kept apart from the library: marked as tests, never checked in place as the library's code
    assert kept["helper"].is_test and kept["helper"].crate_root is None
    assert not kept["parse"].is_test and kept["parse"].crate_root == str(crate.resolve())


def test_trait_wrapper_keeps_multiline_signatures_whole(tmp_path, rust_oracle):
    crate = write(tmp_path / "visit", {"Cargo.toml": CARGO.format(name="visit"), "src/lib.rs": """
pub struct ClassSetItem;

pub trait Visitor {
    fn finish(self) -> u8;

    fn visit_class_set_item_pre(
        &mut self,
        ast: &ClassSetItem,
    ) -> Result<(), ()> {
        let _ = ast;
        Ok(())
    }
}
"""})
    decls = extract_paths([crate], ExtractOptions(jobs=1)).declarations
    method = next(d for d in decls if d.name == "visit_class_set_item_pre")
    source = standalone_source(method)
    assert not rust_parser().parse(source.encode()).root_node.has_error, source
    assert rust_oracle.check([Candidate.of(source)])[0].passed, source


def _row(operator: str, code: str, n: int):
    verdict = Verdict(candidate_id=str(n), passed=True, oracle="rustc", toolchain="t")
    return make_row(lang="rust", lane="rust_repair", task="repair", prompt=f"p{n}", response=f"r{n}", verdict=verdict,
                    provenance=Provenance(source_path="a.rs", decl_hash=str(n), stage="repair", seed=0),
                    checked_source="fn a() {}", checked_broken_source="fn a(", operator=operator, primary_code=code)


def test_balance_keeps_a_row_per_operator_and_code_when_few_are_killed(tmp_path):
    kept, dropped = balance([_row("swap", "E0308", 0)], 0.25, seed=0)
    assert len(kept) == 1 and dropped == []
    rows = [_row("swap", "E0308", i) for i in range(3)] + [_row("drop_arg", "E0061", 3)]
    kept, dropped = balance(rows, 0.25, seed=0)
    assert Counter(r.operator for r in kept) == {"swap": 1, "drop_arg": 1} and len(dropped) == 2


def test_balance_drops_are_counted_in_stats(tmp_path, rust_oracle):
    crate = write(tmp_path / "few", {"Cargo.toml": CARGO.format(name="few"), "src/lib.rs": PRINTER})
    decls = extract_paths([crate], ExtractOptions(jobs=1)).declarations
    unbalanced = repair_rows(decls, rust_oracle, RepairSettings(), 0, balanced=False)
    result = repair_rows(decls, rust_oracle, RepairSettings(), 0)
    killed = sum(s.killed for s in result.stats.values())
    assert 0 < len(result.rows) < len(unbalanced.rows) <= killed
    # the same through `synth mutate`'s path: a run with only the repair lane counts what balance dropped
    summary = run_pipeline(repair_only([crate], tmp_path / "run", tmp_path / "cache",
                                       repair=RepairSettings(in_crate="never")))
    stats = json.loads((tmp_path / "run" / "stats" / "run.json").read_text())
    assert summary.lanes["repair"]["rows"] == len(result.rows)
    assert stats["rejections"]["repair"]["balance: share"] == len(unbalanced.rows) - len(result.rows)


MISSING_ITEM = "trait T { fn f(&self) -> u8; }\nstruct S;\nimpl T for S {}\n"
SUGGESTION = "`fn f(&self) -> u8 { todo!() }`"


def test_rustc_suggestions_are_rendered_once(tmp_path, rust_oracle):
    path = write(tmp_path, {"t.rs": MISSING_ITEM + "fn g<X>(x: X) -> X { x.clone() }\n"}) / "t.rs"
    out = cli("check", str(path), "--no-cache").stdout
    assert out.count(SUGGESTION) == 1 and f"{SUGGESTION}: {SUGGESTION}" not in out, out
    assert "with it: `: Clone`" in out.replace("\n", " ") and "with it::" not in out, out
    decl = Declaration(id="d", lang="rust", kind="impl", name="S", path="t.rs", start_byte=0, end_byte=15,
                       start_line=3, end_line=3, text="impl T for S {}", clean_text="impl T for S {}", hash="h",
                       context="trait T { fn f(&self) -> u8; }\nstruct S;\n")
    verdict = rust_oracle.check([Candidate.of(standalone_source(decl))])[0]
    prompt_part = render_diagnostics(verdict, decl.clean_text, answer_offset(decl))
    assert prompt_part.count(SUGGESTION) == 1, prompt_part


FINDER = """pub trait Finder {
    fn count(
        &self,
    ) -> usize;
}

pub struct One<'a> {
    haystack: &'a [u8],
}

impl<'a> One<'a> {
    pub fn find(&self, needle: u8) -> Option<usize> {
        let found = self.haystack.iter().position(|&b| b == needle);
        found
    }
}

impl<'a> Finder for One<'a> {
    fn count(&self) -> usize {
        let n = self.haystack.len();
        n
    }
}
"""


def test_method_prompts_show_their_impl_and_dedented_code(tmp_path, rust_oracle):
    crate = write(tmp_path / "memchr", {"Cargo.toml": CARGO.format(name="memchr"), "src/lib.rs": FINDER})
    decls = extract_paths([crate], ExtractOptions(jobs=1)).declarations
    rows = repair_rows([d for d in decls if d.kind == "method"], rust_oracle, RepairSettings(max_share=1.0), 0).rows
    assert {r.fixed.split("(")[0] for r in rows} >= {"pub fn find", "fn count"}
    for row in rows:
        header = "impl<'a> Finder for One<'a> {" if "fn count" in row.fixed else "impl<'a> One<'a> {"
        assert header in row.prompt, row.prompt
        for block in (row.broken, row.fixed):
            lines = block.rstrip().splitlines()
            assert lines[-1] == "}" and lines[1].startswith("    ") and not lines[1].startswith("        "), block
    trait_rows = [r for r in rows if "fn count" in r.fixed]
    assert all("fn count(\n        &self,\n    ) -> usize;" in r.prompt for r in trait_rows), trait_rows[0].prompt


def test_crate_check_workspace_member_and_optional_dependencies(tmp_path):
    ws = write(tmp_path / "regex", {
        "Cargo.toml": '[workspace]\nmembers = ["syntax"]\n\n[workspace.package]\nversion = "0.8.0"\n'
                      'edition = "2021"\ninclude = ["src/**"]\n',
        "syntax/Cargo.toml": '[package]\nname = "syntax"\nversion.workspace = true\nedition.workspace = true\n'
                             'include.workspace = true\n\n[dependencies]\n'
                             'not_on_any_registry_core = { version = "1", optional = true }\n\n'
                             '[features]\ndefault = ["std"]\nstd = []\nserde = ["dep:not_on_any_registry_core"]\n',
        "syntax/src/lib.rs": "#![no_std]\nextern crate alloc;\npub fn parse() -> alloc::vec::Vec<u8> { alloc::vec![1] }\n"})
    result = cli("check", str(ws / "syntax"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_crate_check_errors_name_user_paths_and_what_to_do(tmp_path):
    crate = write(tmp_path / "facade", {
        "Cargo.toml": CARGO.format(name="facade") + '\n[dependencies]\nde_serde_core_nowhere = "1"\n',
        "src/lib.rs": "pub fn f() {}\n"})
    result = cli("check", str(crate), "--no-cache", "--json")
    message = json.loads(result.stdout)["diagnostics"][0]["message"]
    assert "no matching package named `de_serde_core_nowhere` found" in message, message
    assert "synth-sbx" not in message and str(crate) in message, message
    assert re.search(r"what to do: .*`de_serde_core_nowhere`", message), message


VOX = '''tool "Area of a square (in m2)" square_area(side: float) to float {
    side * side
}

resource "vox://notes" "All notes" notes() to list[str] {
    []
}

tool "nameless" {
}
'''


def test_vox_string_heads_get_their_names(tmp_path):
    parsed = parse_vox(VOX)
    assert [(i.kind, i.name, i.params) for i in parsed.items] == [
        ("tool", "square_area", "(side: float)"), ("resource", "notes", "()")]
    assert len(parsed.unnamed) == 1 and "line 9" in parsed.unnamed[0]
    result = extract_paths([write(tmp_path, {"mcp.vox": VOX}) / "mcp.vox"], ExtractOptions(jobs=1))
    assert all(d.name for d in result.declarations) and len(result.declarations) == 2
    assert result.summary()["declarations_left_out"] == {"Vox declaration without a name": 1}


def test_row_quality_counts_each_defect(tmp_path):
    from benchmarks.row_quality import crate_check_counts, row_counts
    crate = write(tmp_path / "c", {"Cargo.toml": CARGO.format(name="c"), "src/lib.rs": "pub fn f() {}\n",
                                   "tests/it.rs": "fn it() {}\n"})
    broken = write(tmp_path / "b", {"Cargo.toml": CARGO.format(name="b") + '[dependencies]\nnowhere_xyz = "1"\n',
                                    "src/lib.rs": ""})
    base = {"provenance": {"source_path": "src/lib.rs"}, "prompt": "p", "wrapper_head": ""}
    rows = [{**base, "id": "a"}, {**base, "id": "a"},
            {**base, "id": "b", "provenance": {"source_path": "tests/it.rs"}},
            {**base, "id": "c", "wrapper_head": "impl<'a> One<'a> {\n", "wrapper_tail": "}", "prompt": "fn find"},
            {**base, "id": "d", "wrapper_head": "impl Two {\n", "wrapper_tail": "}", "prompt": "impl Two {"},
            {**base, "id": "e", "prompt": "help: x: `fn f() {}`: `fn f() {}`"}]
    assert row_counts(rows, [crate]) == {"rows": 6, "unique_ids": 5, "duplicate_ids": 1, "from_test_code": 1,
                                         "method_rows": 2, "method_rows_without_impl_header": 1,
                                         "prompts_repeating_help": 1}
    checked = crate_check_counts([crate, broken])
    assert (checked["passed"], checked["failed"], checked["failed_naming_temp_path"]) == (1, 1, 0)
