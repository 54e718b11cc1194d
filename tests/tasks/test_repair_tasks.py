"""Repair tasks judged with real rustc: an answer is placed where the broken declaration was and
counts when it compiles, keeps the original signature and is not hollow; a fix that only deletes
the erroring statement is counted as such; rustc's own machine-applicable fixes as a baseline;
a task's reference answer always counts and the broken code never does (checks of the judge);
rows over the token limits cost no compile."""
import json

import pytest

from oracles.errors import InputError
from oracles.verdict import Candidate
from synth.tasks.split import repair_task
from synth.tasks.baselines import compiler_answers
from synth.tasks.baselines.compiler_words import char_edits
from synth.extract.extract import ExtractOptions, extract_paths
from synth.tasks.judge import Judge, deletes_the_error
from synth.lanes.repair import mark_compiler_solvable
from synth.mutate.repair import SOLVABLE_CAP, RepairSettings, repair_rows
from synth.tasks.task import Task
from helpers.replies import fenced

CONTEXT = "pub struct Stats {\n    pub count: u32,\n}\n\n"
ORIGINAL = """pub fn total(xs: &[u32]) -> u32 {
    let mut sum = 0;
    for x in xs {
        sum += x;
    }
    println!("{}", sum);
    sum
}"""


def task(broken: str, original: str = ORIGINAL, signature: str = "pub fn total(xs: &[u32]) -> u32") -> Task:
    return Task(id="t", lang="rust", family="repair", prompt="fix it", must_define=["fn total"], group="g",
                reference=original, broken=broken, signature=signature, context=CONTEXT, before=CONTEXT, after="\n")



def test_a_repair_answer_counts_when_it_compiles_keeps_the_signature_and_is_not_hollow(rust_oracle):
    broken = ORIGINAL.replace('println!("{}", sum);', 'println!("{}", summ);')  # E0425
    t = task(broken)
    answers = {
        "exact": ORIGINAL,
        "other fix": ORIGINAL.replace("sum += x;", "sum = sum + x;"),
        "unchanged": broken,
        "hollow": "pub fn total(xs: &[u32]) -> u32 {\n    todo!()\n}",
        "self call": "pub fn total(xs: &[u32]) -> u32 {\n    total(xs)\n}",
        "new signature": ORIGINAL.replace("-> u32 {", "-> u64 {").replace("    sum\n}", "    sum as u64\n}"),
        "deleted": ORIGINAL.replace('    println!("{}", sum);\n', ""),
    }
    judge = Judge({"rust": rust_oracle})
    got = dict(zip(answers, judge.judge([t] * len(answers), [fenced(a) for a in answers.values()])))
    assert got["exact"].solved and got["exact"].exact and not got["exact"].deleted
    assert got["other fix"].solved and not got["other fix"].exact and not got["other fix"].deleted
    assert not got["unchanged"].compiled and got["unchanged"].first_error == "E0425"
    assert got["hollow"].compiled and not got["hollow"].solved  # a todo!() body defines nothing
    assert got["self call"].compiled and not got["self call"].solved  # unconditional recursion
    assert got["new signature"].compiled and not got["new signature"].solved  # callers see another function
    # the erroring line dropped where the original has it in another form: it compiles, and counts not
    assert got["deleted"].compiled and got["deleted"].deleted and not got["deleted"].solved
    assert got["deleted"].refused == "deleted" and not got["deleted"].exact
    added = ORIGINAL.replace("    sum\n}", "    summ;\n    sum\n}")  # the mutant only added a line: deleting it is the fix
    dropped = judge.judge([task(added)], [fenced(ORIGINAL.replace("sum += x;", "sum = sum + x;"))])[0]
    assert dropped.solved and not dropped.deleted and not dropped.exact
    # two errors, a line added and one changed: a fix in other words leaves the added one out too
    both = added.replace('println!("{}", sum);', 'println!("{}", summ);')
    other = judge.judge([task(both)], [fenced(ORIGINAL.replace("sum += x;", "sum = sum + x;"))])[0]
    assert other.solved and not other.deleted and not other.exact, other.refused


def test_deletion_is_told_from_a_fix_on_the_changed_lines():
    broken = ORIGINAL.replace("sum += x;", "sum += y;")
    assert deletes_the_error(ORIGINAL.replace("        sum += x;\n", ""), broken, ORIGINAL)
    assert not deletes_the_error(ORIGINAL, broken, ORIGINAL)  # the original line is back
    assert not deletes_the_error(ORIGINAL.replace("sum += x;", "sum += *x;"), broken, ORIGINAL)  # rewritten, not gone
    # gone, though lines are kept: commented out, or traded for a statement that does nothing
    for stand_in in ("/* sum += y; */", "let _ = 0;", "let _unused = sum;", ";"):
        assert deletes_the_error(ORIGINAL.replace("sum += x;", stand_in), broken, ORIGINAL), stand_in
    # sized in tokens, not lines: the erroring part cut from a line, or a short body spread over lines
    off = "fn off(&self) -> usize {\n    self.src.len() - self.iter.len()\n}"
    off_broken = off.replace("self.src.len()", "self.srcs.length()")
    assert deletes_the_error(off.replace("self.src.len() - ", ""), off_broken, off)
    assert deletes_the_error("fn off(&self)\n    -> usize\n{\n    0\n}", off_broken, off)
    assert not deletes_the_error(off.replace(" - ", "-"), off_broken, off)  # spacing is no change
    # the signature put right, the body the mutation did not touch traded for a constant
    returns = ORIGINAL.replace("-> u32 {", "-> bool {")
    assert deletes_the_error("pub fn total(xs: &[u32]) -> u32 {\n    0\n}", returns, ORIGINAL)
    assert not deletes_the_error(ORIGINAL.replace("sum += x;", "sum += *x;"), returns, ORIGINAL)
    # a guess for a dropped argument, the header put right, the impl's `#[cfg]` left out: no code gone
    drop_impl = '#[cfg(not(feature = "x"))]\nimpl<A: T> Drop for S<A> {\n    fn drop(&mut self) {\n        f(a, b);\n    }\n}'
    drop_broken = drop_impl.replace("<A: T>", "<A>").replace("f(a, b)", "f(a)")
    assert not deletes_the_error(drop_impl.split("\n", 1)[1].replace("f(a, b)", "f(a, 0)"), drop_broken, drop_impl)
    quiet = ORIGINAL.replace("    sum\n}", "    let _ = xs;\n    sum\n}")  # the code's own no-op is not the error
    assert not deletes_the_error(quiet.replace("sum += x;", "sum += *x;"), quiet.replace("sum += x;", "sum += y;"), quiet)


@pytest.mark.parametrize("case,original,broken", [
    ("E0384", "pub fn count() -> u32 {\n    let mut n = 0;\n    n += 1;\n    n\n}",
     "pub fn count() -> u32 {\n    let n = 0;\n    n += 1;\n    n\n}"),
    ("E0308", "pub fn size() -> usize {\n    let s = String::new();\n    len_of(&s)\n}",
     "pub fn size() -> usize {\n    let s = String::new();\n    len_of(s)\n}"),
])
def test_rustcs_machine_applicable_fix_as_a_baseline(rust_oracle, case, original, broken):
    context = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n\n"
    signature = original.split(" {")[0]
    t = Task(id=case, lang="rust", family="repair", prompt="fix", must_define=[f"fn {signature.split()[2][:-2]}"],
             reference=original, broken=broken, signature=signature, before=context, after="\n")
    assert rust_oracle.check([Candidate.of(t.source(broken))])[0].errors[0].code == case
    judge = Judge({"rust": rust_oracle})
    fixed = compiler_answers("rustc", [t], judge)[0]
    assert fixed == original  # `let mut n`, `len_of(&s)`: what cargo fix would write
    assert judge.judge([t], [fenced(fixed)])[0].solved


def test_compiler_baselines_do_not_apply_to_codegen_tasks(rust_oracle):
    codegen = Task(id="c", lang="rust", prompt="write")
    assert compiler_answers("rustc_all", [codegen], Judge({"rust": rust_oracle})) == [None]
    assert char_edits("let x = 1;", [(1, 5, 1, 5, "mut "), (1, 5, 1, 6, "y"), (1, 10, 1, 11, "!")]) == "let mut x = 1!"
    assert char_edits("é x", [(1, 3, 1, 4, "y")]) == "é y"  # columns count characters, not bytes


def test_tasks_from_real_repair_rows_pass_on_their_reference_and_fail_unchanged(tmp_path, rust_oracle):
    (tmp_path / "lib.rs").write_text(CONTEXT + ORIGINAL + "\n\nimpl Stats {\n    pub fn bump(&mut self, by: u32) -> u32 {\n"
                                     "        let before = self.count;\n        self.count = before + by;\n"
                                     "        self.count\n    }\n}\n")
    decls = extract_paths([str(tmp_path)], ExtractOptions(jobs=1)).declarations
    result = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0, max_compiler_solvable=1.0, in_crate="never"))
    tasks = [repair_task(json.loads(r.model_dump_json())) for r in result.rows]
    assert len(tasks) >= 4 and all(tasks) and {t.signature for t in tasks} == {  # the impl block is a declaration too
        "pub fn total(xs: &[u32]) -> u32", "pub fn bump(&mut self, by: u32) -> u32", "impl Stats"}
    judge = Judge({"rust": rust_oracle})
    assert all(o.solved and o.exact for o in judge.judge(tasks, [fenced(t.reference) for t in tasks]))
    assert not any(o.compiled for o in judge.judge(tasks, [fenced(t.broken) for t in tasks]))
    method = next(t for t in tasks if "bump" in t.signature)
    assert method.before.endswith("impl Stats {\n") and method.after.startswith("\n}")  # placed inside its impl


def test_rows_over_the_token_limits_are_rejected_before_any_compile(tmp_path):
    from oracles.rustc.oracle import RustOracle
    from oracles.settings import OracleSettings
    from synth.settings.fit import TOO_LONG, Fit, TokenSettings

    (tmp_path / "lib.rs").write_text(CONTEXT + ORIGINAL + "\n\npub fn one() -> u32 {\n    let n = 1;\n    n\n}\n")
    decls = extract_paths([str(tmp_path)], ExtractOptions(jobs=1)).declarations
    config = RepairSettings(max_share=1.0, max_compiler_solvable=1.0, in_crate="never")
    unlimited, limited = RustOracle(OracleSettings()), RustOracle(OracleSettings())
    everything = repair_rows(decls, unlimited, config)
    fitting = repair_rows(decls, limited, config, fit=Fit(TokenSettings(max_answer=20)))
    assert {r.response.split("(")[0] for r in everything.rows} == {"pub fn total", "pub fn one"}
    assert fitting.rows and {r.response.split("(")[0] for r in fitting.rows} == {"pub fn one"}
    assert [r.kind for r in fitting.rejected if r.about.get("name") == "total"] == ["over the token limits"]
    # `total` and its mutants were never compiled: only `one` and its mutants were
    mutants_of_total = sum(1 for r in everything.rows if "total" in r.response)
    assert limited.stats.candidates_compiled <= unlimited.stats.candidates_compiled - 1 - mutants_of_total
    # the loop reports what the window turned away, read back from the rejections as the run writes them
    from benchmarks.loop_commands import window_figures
    prompt_cap = Fit(TokenSettings(max_prompt=60))
    capped = repair_rows(decls, RustOracle(OracleSettings()), config, fit=prompt_cap)
    longest = max(prompt_cap.count(r.prompt) for r in everything.rows)
    figures = window_figures([r.to_json() for r in capped.rejected])
    assert figures["rejected"] == figures["declarations"] + figures["rows"] > 0 and figures["by_answer"] == 0
    assert 60 < figures["prompt_median"] <= longest
    assert figures["fit_at_prompt_limit"]["4x"] >= figures["fit_at_prompt_limit"]["2x"] >= 1
    made = [{"kind": TOO_LONG, "reason": f"{TOO_LONG}: prompt {n} > 60"} for n in (100, 130, 300)]
    made.append({"kind": TOO_LONG, "reason": f"{TOO_LONG}: answer 50 > 20", "row_id": "r"})
    assert window_figures(made + [{"kind": "equivalent mutant", "reason": "same"}]) == {
        "rejected": 4, "declarations": 3, "rows": 1, "by_answer": 1, "prompt_median": 130,
        "fit_at_prompt_limit": {"2x": 1, "4x": 2}}
    with pytest.raises(InputError, match="no token counts: 'over the token limits: prompt too long'"):
        window_figures(made + [{"kind": TOO_LONG, "reason": f"{TOO_LONG}: prompt too long"}])
    assert window_figures([r.to_json() for r in fitting.rejected]) == {
        "rejected": 1, "declarations": 1, "rows": 0, "by_answer": 1, "prompt_median": None,
        "fit_at_prompt_limit": {"2x": 0, "4x": 0}}


def test_rows_say_whether_the_compilers_help_fixes_them_and_the_cap_holds(tmp_path, rust_oracle):
    """Each row's compiler_solvable is best_free's verdict on its mutant, judged in place; the cap
    keeps such rows to their share and says why it dropped the others."""
    (tmp_path / "lib.rs").write_text(CONTEXT + ORIGINAL + "\n\nfn scale(x: u32, by: u32) -> u32 {\n    x * by\n}\n\n"
                                     "pub fn pick(xs: &[u32], at: usize) -> u32 {\n    let chosen = xs[at];\n"
                                     "    let twice = scale(chosen, 2);\n    twice\n}\n")
    decls = extract_paths([str(tmp_path)], ExtractOptions(jobs=1)).declarations
    whole = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0, max_compiler_solvable=1.0, in_crate="never"),
                        solvable=mark_compiler_solvable)
    flags = {(r.name, r.operator): r.compiler_solvable for r in whole.rows}
    assert flags["total", "unresolved_name"] is True and flags["total", "immutable_binding"] is True
    assert flags["pick", "argument_count"] is True  # rustc's placeholder for the argument, filled by its type
    assert flags["total", "conflicting_borrow"] is False  # nor does it say which borrow to drop
    assert all(isinstance(r.compiler_solvable, bool) for r in whole.rows)
    solvable = sum(r.compiler_solvable for r in whole.rows)
    assert 0 < solvable < len(whole.rows)
    capped = repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0, max_compiler_solvable=0.25, in_crate="never"),
                         solvable=mark_compiler_solvable)
    kept = sum(r.compiler_solvable for r in capped.rows)
    assert kept <= 0.25 * len(capped.rows) and len(capped.rows) == len(whole.rows) - (solvable - kept)
    reasons = [r.reason for r in capped.rejected if r.kind == SOLVABLE_CAP]
    assert len(reasons) == solvable - kept and all("compiler's help fixes" in r for r in reasons)
    assert not [r for r in capped.rejected if r.kind == "balance: share"]  # max_share took none here
