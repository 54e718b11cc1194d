"""Values a repair cannot read (synth/mutate/unseen.py): a literal the fix puts back that no code of
the prompt says is unseen; one the context, a comment or another literal says is in sight. Real
repair rows (real rustc) carry it into their tasks, `synth eval` into its per-task results, and
the loop reads its figures apart by it."""
import json

from synth.extract.extract import ExtractOptions, extract_paths
from synth.mutate.repair import RepairSettings, repair_rows
from synth.mutate.unseen import unseen_literals
from synth.tasks.judge import Judge
from synth.tasks.split import repair_task
from training.evaluation.evaluate import evaluate
from training.run.profile import EvalSettings


def prompt(context: str, broken: str) -> str:
    return f"Context:\n```rust\n{context}\n```\n\nThe declaration:\n```rust\n{broken}\n```\n\nerror[E0061]: line 3, 1 argument"


def test_a_value_no_code_of_the_prompt_says_is_unseen():
    fixed = 'fn strict() -> usize {\n    warn("-Wextra", 3)\n}'
    broken = 'fn strict() -> usize {\n    warn()\n}'
    assert unseen_literals(broken, fixed, prompt("fn warn(s: &str, n: u8) -> usize { 0 }", broken)) == ['"-Wextra"', "3"]
    # said by the context, a comment (any case), another literal: in sight
    assert unseen_literals(broken, fixed, prompt('const ALL: [&str; 2] = ["-Wall", "-Wextra"]; // at most 3', broken)) == []
    assert unseen_literals(broken, fixed, prompt("/// Warns with -WEXTRA, 3 times", broken)) == []
    # rustc's prose and positions are not code: "line 3" says no 3
    assert unseen_literals(broken, fixed, prompt("/// Warns with -wextra", broken)) == ["3"]
    # comments as the parse reads them: a block comment says its numbers, a `//` inside a string is none
    assert unseen_literals(broken, fixed, prompt("/* -Wextra, at most 3 */", broken)) == []
    assert unseen_literals(broken, fixed, prompt('const URL: &str = "http://-wextra 3";', broken)) == ["3"]
    # a value given in the wrong type is in sight; a tuple field's index is a name; a rename adds none
    assert unseen_literals('fn f() { g("0") }', "fn f() { g(0) }", prompt("", 'fn f() { g("0") }')) == []
    assert unseen_literals("fn f(&self) -> u8 { }", "fn f(&self) -> u8 { self.0 }", prompt("", "")) == []
    assert unseen_literals("fn f() -> u8 { totl }", "fn f() -> u8 { total }", prompt("", "")) == []


def test_repair_tasks_say_which_fixes_need_an_unseen_value(tmp_path, rust_oracle):
    (tmp_path / "lib.rs").write_text(
        "pub fn warn(flag: &str) -> usize {\n    flag.len()\n}\n\n"
        'pub fn strict() -> usize {\n    warn("-Wextra")\n}\n\n'
        '/// Warns as `-W4` does.\npub fn lenient() -> usize {\n    warn("-W4")\n}\n')
    decls = extract_paths([str(tmp_path)], ExtractOptions(jobs=1)).declarations
    rows = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0, max_compiler_solvable=1.0, in_crate="never")).rows
    tasks = [repair_task(json.loads(r.model_dump_json())) for r in rows]
    dropped = {t.signature: t for t in tasks if t.operator == "argument_count"}
    assert dropped["pub fn strict() -> usize"].unseen_literals == ['"-Wextra"']
    assert dropped["pub fn lenient() -> usize"].unseen_literals == []  # its doc comment says it
    judge = Judge({"rust": rust_oracle})
    chosen = list(dropped.values())
    broken = lambda batch, k=None: [[f"```rust\n{t.broken}\n```"] for t in batch]  # noqa: E731
    result = evaluate(EvalSettings(decoding="greedy", k=1, samples=1), broken, judge, chosen, "unchanged")
    assert {t.signature: result["per_task"][t.id]["unseen_literals"] for t in chosen} == {
        "pub fn strict() -> usize": 1, "pub fn lenient() -> usize": 0}
    from benchmarks.loop_bench import by_unseen_literals
    figures = by_unseen_literals({"base": result, "best_free": result}, "repair")
    assert figures["in_sight"]["tasks"] == 1 and figures["unseen"]["tasks"] == 1
    assert figures["unseen"]["beyond_compiler"] == {"tasks": 1, "base": 0.0}
