"""Declaration extraction: exact spans, real names, clean answers, well-posed context, nothing lost."""
import pytest
import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE_CRATE, ROOT

from benchmarks.fixtures.rust_corpus import write_corpus
from oracles.cargo.oracle import CargoOracle, Splice
from oracles.settings import OracleSettings
from oracles.rustc.oracle import RustOracle
from oracles.verdict import Candidate
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.extract.model import Declaration, standalone_source

FIXTURES = ROOT / "tests" / "fixtures" / "extract"
CONTRACT_KEYS = {"id", "lang", "kind", "name", "path", "start_byte", "end_byte", "start_line", "end_line", "text",
                 "doc", "signature", "context", "hash", "retired"}


def _assert_round_trip(result, base: Path) -> int:
    """Splicing each declaration's text back at its span reproduces the file byte for byte."""
    files = {}
    for decl in result.declarations:
        data = files.setdefault(decl.path, (base / decl.path).read_bytes())
        spliced = data[:decl.start_byte] + decl.text.encode() + data[decl.end_byte:]
        assert spliced == data, decl.path
        assert data[:decl.start_byte].count(b"\n") + 1 == decl.start_line
        assert data[:decl.end_byte].count(b"\n") + 1 == decl.end_line
    return len(result.declarations)


def test_round_trip_examples_and_fixtures():
    for root in (ROOT / "examples", FIXTURES):  # paths are relative to the scanned folder
        result = extract_paths([root], ExtractOptions(include_tests=True, jobs=1))
        assert _assert_round_trip(result, root) >= 9


def test_round_trip_generated_corpus(tmp_path):
    write_corpus(tmp_path / "corpus", 650_000)
    result = extract_paths([tmp_path / "corpus"], ExtractOptions(include_tests=True, jobs=2))
    assert _assert_round_trip(result, tmp_path / "corpus") >= 2000
    assert any(not d.text.isascii() for d in result.declarations)  # byte offsets, not characters


@pytest.mark.slow
def test_every_example_declaration_spliced_back_passes_cargo():
    result = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1))
    rust = [d for d in result.declarations if d.lang == "rust"]
    assert len(rust) >= 40
    splices = [Splice(str(EXAMPLE_CRATE), d.path, d.start_byte, d.end_byte, d.text)
               for d in rust]
    verdicts = CargoOracle().check(splices)
    assert all(v.passed for v in verdicts), [(d.name, v.errors) for d, v in zip(rust, verdicts) if not v.passed]


def test_context_stubs_compile_standalone_in_batches():
    result = extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1))
    rust = [d for d in result.declarations if d.lang == "rust"]
    oracle = RustOracle(OracleSettings(jobs=2))
    verdicts = oracle.check([Candidate.of(standalone_source(d)) for d in rust])
    fns = [(d, v) for d, v in zip(rust, verdicts) if d.kind in ("fn", "method")]
    share = sum(v.passed for _, v in fns) / len(fns)
    print(f"standalone stubs: {sum(v.passed for _, v in fns)}/{len(fns)} free functions and methods pass")
    assert share >= 0.9, [(d.name, [e.render() for e in v.errors][:1]) for d, v in fns if not v.passed]
    # These need whole trait impls in their context (`label` uses Point's Display only implicitly).
    needs_trait_impls = {d.name: v.passed for d, v in fns if d.name in ("total_area", "perimeter", "label")}
    assert needs_trait_impls == {"total_area": True, "perimeter": True, "label": True}
    assert oracle.stats.batch_runs >= 1 and not oracle.stats.solo_reasons  # batchable as the stub promises
    # A stub is context, not the answer: the declaration's body is not in its own context.
    lcm = next(d for d in rust if d.name == "lcm")
    assert "a / gcd(a, b) * b" not in lcm.context and "pub fn gcd(a: u64, b: u64) -> u64" in lcm.context
    assert lcm.references == ["gcd"]
    area = next(d for d in rust if d.name == "area" and d.kind == "method")
    assert area.self_type == "Shape" and area.trait_name == "Measure"
    assert area.wrapper_head.startswith("impl Measure for Shape {")


def test_names_and_metadata_never_reach_answers():
    result = extract_paths([FIXTURES / "metadata.rs", FIXTURES / "metadata.vox"], ExtractOptions(jobs=1))
    by_name = {d.name: d for d in result.declarations}
    assert {"add", "example", "greet", "Legacy", "old_add", "Counter"} <= set(by_name)
    assert all(d.name for d in result.declarations)
    add = by_name["add"]
    assert "ANCHOR: add" in add.text and "STABLE" in add.text  # the span is exact...
    for decl in result.declarations:  # ...but no answer carries metadata
        for marker in ("ANCHOR", "STABLE", "training_eligible", "syntax_version"):
            assert marker not in decl.clean_text, (decl.name, marker)
    assert add.doc == "Adds two numbers." and add.clean_text.startswith("/// Adds two numbers.\npub fn add")
    assert by_name["example"].doc.startswith("The source itself names")


def test_vox_declarations():
    result = extract_paths([FIXTURES / "metadata.vox", ROOT / "examples/vox"], ExtractOptions(jobs=1))
    by_name = {d.name: d for d in result.declarations}
    greet = by_name["greet"]
    assert (greet.kind, greet.params, greet.return_type, greet.retired) == ("fn", "(name: str)", "str", False)
    assert greet.doc.startswith("Greets somebody")
    assert by_name["Legacy"].retired and by_name["Legacy"].kind == "type"
    assert by_name["old_add"].retired and by_name["old_add"].attributes == ["@mutation"]
    assert by_name["Counter"].kind == "component" and not by_name["Counter"].retired
    assert by_name["arrow_return"].retired and by_name["arrow_return"].return_type == "int"  # `->` is retired
    assert by_name["add_task"].kind == "mutation" and "Task" in by_name["add_task"].context
    assert "first_negative_finds_minus_two" not in by_name  # @test functions are test-only by default
    with_tests = extract_paths([ROOT / "examples/vox"], ExtractOptions(jobs=1, include_tests=True))
    assert any(d.is_test for d in with_tests.declarations)


def test_corpus_rules_list_every_skip(tmp_path):
    src = tmp_path / "proj"
    for rel, body in {
        "src/lib.rs": "pub fn kept() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n",
        "target/debug/build.rs": "pub fn built() {}\n", "vendor/dep/lib.rs": "pub fn vendored() {}\n",
        "patches/x/lib.rs": "pub fn patched() {}\n", "archive/old.rs": "pub fn old() {}\n",
        "src/schema.generated.rs": "pub fn gen() {}\n", "src/bindings.rs": "// @generated by a tool\npub fn b() {}\n",
        "src/notes.txt": "not code",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)
    result = extract_paths([src], ExtractOptions(jobs=1))
    assert [d.name for d in result.declarations] == ["kept"]
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["target/"].startswith("build output") and reasons["vendor/"].startswith("vendored")
    assert reasons["patches/"].startswith("patched") and reasons["archive/"].startswith("archived")
    assert reasons["src/schema.generated.rs"].startswith("generated") and "@generated" in reasons["src/bindings.rs"]
    assert result.dropped["test-only"] == 1  # the function inside `#[cfg(test)] mod tests`
    included = extract_paths([src], ExtractOptions(jobs=1, include_tests=True))
    assert {"kept", "t"} <= {d.name for d in included.declarations}


def test_bad_input_is_reported_never_fatal(tmp_path):
    (tmp_path / "bad_utf8.rs").write_bytes(b"pub fn f() -> &'static str { \"\xff\xfe\" }\n")
    (tmp_path / "binary.rs").write_bytes(b"\x7fELF\x00\x00\x01binary")
    (tmp_path / "huge.rs").write_text("pub fn big() {}\n" + "// padding\n" * 20_000)
    (tmp_path / "garbage.rs").write_text("}}}} ))) fn fn fn {{{{ :: ;; <<<\n")
    (tmp_path / "partial.rs").write_text((FIXTURES / "partial.rs").read_text())
    (tmp_path / "unbalanced.vox").write_text((FIXTURES / "unbalanced.vox").read_text())
    (tmp_path / "ok.rs").write_text("pub fn ok() -> u8 { 1 }\n")
    result = extract_paths([tmp_path], ExtractOptions(jobs=1, max_bytes=100_000))
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["bad_utf8.rs"] == "invalid UTF-8 at byte 30"
    assert reasons["binary.rs"] == "binary (NUL bytes)"
    assert reasons["huge.rs"].startswith("too large")
    assert reasons["garbage.rs"].startswith("does not parse")
    found = {(d.path, d.name) for d in result.declarations}
    assert found == {("ok.rs", "ok"), ("partial.rs", "fine"), ("partial.rs", "also_fine"), ("unbalanced.vox", "ok")}
    assert result.dropped["contains a parse error"] == 1  # `broken`, counted, not silently lost
    assert result.dropped["rest of file after a Vox parse error"] == 1  # `never_closed` and what follows


def test_near_parse_error_flag():
    result = extract_paths([FIXTURES / "partial.rs"], ExtractOptions(jobs=1))
    flags = {d.name: d.near_parse_error for d in result.declarations}
    assert flags == {"fine": True, "also_fine": False}  # `fine` ends two lines above the broken one


def test_cli_extract(tmp_path):
    out = tmp_path / "decls.jsonl"
    done = subprocess.run([sys.executable, "-m", "synth.cli.main", "extract", "examples", "--out", str(out), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["files_read"] == 9 and summary["declarations"] > 60
    assert summary["by_lang_kind"]["rust:method"] >= 20 and summary["by_lang_kind"]["vox:fn"] >= 3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == summary["declarations"] and all(CONTRACT_KEYS <= set(r) for r in rows)
    Declaration.model_validate(rows[0])
    again = tmp_path / "again.jsonl"
    subprocess.run([sys.executable, "-m", "synth.cli.main", "extract", "examples", "--out", str(again)],
                   capture_output=True, cwd=ROOT, check=True)
    assert again.read_bytes() == out.read_bytes()  # deterministic
    missing = subprocess.run([sys.executable, "-m", "synth.cli.main", "extract", "nowhere", "--out", str(out)],
                             capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 2 and "nowhere" in missing.stderr
    no_grammar = subprocess.run([sys.executable, "-m", "synth.cli.main", "extract", "examples", "--out", str(out),
                                 "--vox-grammar", str(tmp_path / "libvox.so")], capture_output=True, text=True, cwd=ROOT)
    assert no_grammar.returncode == 2 and "cannot load the Vox grammar" in no_grammar.stderr
    assert again.read_bytes() == out.read_bytes()  # a refused run leaves the previous output alone


def _crate_with_nested_crate_and_broken_files(root: Path) -> Path:
    """The example crate, a crate inside its folder (paths interleave), and files that are skipped."""
    shutil.copytree(EXAMPLE_CRATE, root / "outer")
    shutil.copytree(EXAMPLE_CRATE / "src", root / "outer" / "src" / "inner" / "src")
    (root / "outer" / "src" / "inner" / "Cargo.toml").write_text('[package]\nname = "inner"\n')
    (root / "outer" / "src" / "broken.rs").write_text("fn (((\n")
    (root / "outer" / "src" / "latin1.rs").write_bytes(b"// caf\xe9\nfn f() {}\n")
    shutil.copy(FIXTURES / "metadata.vox", root / "outer" / "src" / "z.vox")
    return root


def test_parallel_output_is_the_serial_bytes_even_when_every_part_is_sharded(tmp_path, monkeypatch):
    from synth.extract import extract as extract_module
    root = _crate_with_nested_crate_and_broken_files(tmp_path / "c")
    write_corpus(root / "generated", 120_000)
    serial = extract_module.extract_to_jsonl([root], tmp_path / "serial.jsonl", ExtractOptions(jobs=1))
    from synth.extract import work
    from synth.extract.plan import shards
    monkeypatch.setattr(extract_module, "SPLIT_AFTER_S", 0.0)  # every part stops after its first file
    monkeypatch.setattr(work, "REPARSE_FACTOR", 0)
    made = []
    monkeypatch.setattr(extract_module, "shards", lambda *a: made.append(shards(*a)) or made[-1])
    sharded = extract_module.extract_to_jsonl([root], tmp_path / "sharded.jsonl", ExtractOptions(jobs=2))
    assert sum(map(len, made)) > 10  # the crates were finished in shards
    assert (tmp_path / "serial.jsonl").read_bytes() == (tmp_path / "sharded.jsonl").read_bytes()
    assert serial.summary() == sharded.summary()
    summary = serial.summary()
    rust_and_vox_files = len(list(root.rglob("*.rs"))) + len(list(root.rglob("*.vox")))
    assert summary["files_read"] == rust_and_vox_files - 1  # latin1.rs is not UTF-8
    assert {s["path"] for s in summary["skipped"]} == {"outer/src/broken.rs", "outer/src/latin1.rs"}
    rows = [json.loads(line) for line in (tmp_path / "serial.jsonl").read_text().splitlines()]
    assert len(rows) == summary["declarations"] > 500
    assert [(r["path"], r["start_byte"], r["end_byte"]) for r in rows] == sorted(
        (r["path"], r["start_byte"], r["end_byte"]) for r in rows)  # the nested crate's files interleave
    inner = [r for r in rows if r["path"].startswith("outer/src/inner/")]
    assert inner and all(r["crate_root"].endswith("outer/src/inner") for r in inner)


def test_contexts_match_the_reference_builder():
    """The linear builder gives every declaration the context the old fixed point gave it."""
    from helpers.reference_context import reference_context

    from synth.extract.rust.parse import module_path_for, parse_rust
    from synth.extract.rust.context import CrateIndex, build_context
    crates = [EXAMPLE_CRATE, *sorted(Path("/usr/share/cargo/registry").glob("semver-1.*"))[:1]]
    compared = 0
    for crate in crates:
        index, files = CrateIndex(), []
        for path in sorted(crate.rglob("*.rs")):
            rel = str(path.relative_to(crate))
            parsed = parse_rust(path.read_bytes(), module_path_for(rel, rel))
            index.add_file(rel, parsed.items, parsed.use_lines)
            files.append((rel, parsed))
        for rel, parsed in files:
            for item in parsed.items:
                if not item.is_test:
                    assert build_context(item, rel, index, None) == reference_context(item, rel, index), (rel, item.name)
                    compared += 1
    assert compared >= 60


def test_a_context_stops_at_its_budget_nearest_items_first(tmp_path):
    """A chain of types, each with a trait impl: unbounded, the first function's context carries
    the whole chain; under a budget it keeps the nearest types, says it stopped, and stays near the
    budget; the same budget gives the same bytes."""
    links = "\n".join(f"pub struct T{i} {{ pub next: T{i + 1} }}\n"
                       f"impl std::fmt::Display for T{i} {{\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> "
                       f"std::fmt::Result {{ write!(f, \"T{i} {{}}\", 1) }}\n}}\n" for i in range(60))
    crate = tmp_path / "chain"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "chain"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "lib.rs").write_text(links + "pub struct T60;\n\npub fn first(t: &T0) -> String { t.to_string() }\n")

    def first(budget):
        decls = extract_paths([crate], ExtractOptions(max_context_bytes=budget, jobs=1)).declarations
        return next(d for d in decls if d.name == "first")

    whole, capped = first(None), first(2000)
    assert not whole.context_truncated and "pub struct T59" in whole.context
    assert capped.context_truncated and "pub struct T0 " in capped.context and "pub struct T59" not in capped.context
    assert 1000 < len(capped.context) < 3000 < len(whole.context)
    assert capped.model_dump_json() == first(2000).model_dump_json()


def test_scaled_crate_copies_stay_distinct(tmp_path):
    """The bench's scaling crate: k copies give k times the declarations, and each copy's
    contexts name only its own items (so time and memory can grow linearly)."""
    from benchmarks.extract_bench import write_copies
    one = extract_paths([write_copies(EXAMPLE_CRATE, tmp_path / "x1", 1)], ExtractOptions(jobs=1))
    four = extract_paths([write_copies(EXAMPLE_CRATE, tmp_path / "x4", 4)], ExtractOptions(jobs=1))
    assert len(four.declarations) == 4 * len(one.declarations) > 40
    left_out = one.summary()["declarations_left_out"]
    assert four.summary()["declarations_left_out"] == {reason: 4 * n for reason, n in left_out.items()}
    third = [d for d in four.declarations if d.references and all(r.endswith("_3") for r in d.references)]
    with_refs = [d for d in one.declarations if d.references]
    assert len(third) == len(with_refs)
    for decl in four.declarations:
        if decl.name.endswith("_2"):
            assert all(r.endswith("_2") for r in decl.references), (decl.name, decl.references)
