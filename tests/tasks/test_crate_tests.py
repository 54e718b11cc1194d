"""A repair answer judged by its crate's own tests (`[eval] crate_tests`), with real rustc and
cargo: a value the compiler cannot tell from the one meant compiles and counts, and fails the
crate's tests; a rewrite that keeps the behaviour passes them; the original passes without a run;
a crate whose tests fail as it is gives its tasks no tests; the synthesis says where a declaration
checked standalone sits in its crate."""
from pathlib import Path

from oracles.factory import build_oracle
from oracles.settings import OracleSettings
from oracles.verdict import Splice
from synth.tasks.judge import Judge
from synth.tasks.split import repair_task
from synth.tasks.task import CrateSpot, Task
from oracles.factory import crate_tests_oracle

CONTEXT = """pub enum Unit {
    Secs,
    Millis,
}

pub fn scale(unit: Unit) -> u64 {
    match unit {
        Unit::Secs => 1000,
        Unit::Millis => 1,
    }
}

"""
ORIGINAL = "pub fn total_ms(n: u64, unit: Unit) -> u64 {\n    n * scale(unit)\n}"
TESTS = """

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(total_ms(2, Unit::Secs), 2000);
    }
}
"""


def crate(root: Path, tests: str = TESTS) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "units"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    (root / "src" / "lib.rs").write_text(CONTEXT + ORIGINAL + tests)
    return root


def task(root: Path) -> Task:
    at = len(CONTEXT.encode())
    return Task(id="t", lang="rust", family="repair", prompt="fix it", must_define=["fn total_ms"], group="g",
                reference=ORIGINAL, broken=ORIGINAL.replace("scale(unit)", "scale()"),
                signature="pub fn total_ms(n: u64, unit: Unit) -> u64", context=CONTEXT, before=CONTEXT, after="\n",
                crate_spot=CrateSpot(root=str(root), path="src/lib.rs", start_byte=at, end_byte=at + len(ORIGINAL)))


def test_an_answer_that_counts_must_pass_its_crates_tests(rust_oracle, tmp_path):
    t = task(crate(tmp_path / "units"))
    answers = {"exact": ORIGINAL,
               "rewritten": ORIGINAL.replace("n * scale(unit)", "scale(unit) * n"),
               "another value": ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)"),  # compiles: rustc is content
               "not compiling": t.broken}
    judge = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo"))
    got = dict(zip(answers, judge.judge([t] * len(answers), [f"```rust\n{a}\n```" for a in answers.values()])))
    assert got["another value"].solved and got["another value"].tests == 0.0 and not got["another value"].passed
    assert got["rewritten"].passed and got["rewritten"].tests == 1.0
    assert got["exact"].passed and got["exact"].tests == 1.0
    assert not got["not compiling"].passed and got["not compiling"].tests == 0.0
    assert judge.tested == 2  # the original's own run aside: the exact answer is not run again
    plain = Judge({"rust": rust_oracle}).judge([t], [f"```rust\n{answers['another value']}\n```"])[0]
    assert plain.passed and plain.tests is None  # without crate tests nothing tells the value from the one meant


def test_a_crate_whose_tests_fail_as_it_is_gives_no_tests(rust_oracle, tmp_path):
    failing = TESTS.replace("2000", "2001")
    t = task(crate(tmp_path / "units", failing))
    got = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo")).judge(
        [t], ["```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"])[0]
    assert got.solved and got.tests is None and got.passed


def test_a_repair_row_checked_standalone_says_where_it_sits_in_its_crate(rust_oracle, tmp_path):
    from synth.extract.extract import ExtractOptions, extract_paths
    from synth.mutate.repair import RepairSettings, repair_rows

    root = crate(tmp_path / "units")
    decls = [d for d in extract_paths([str(root)], ExtractOptions(jobs=1)).declarations if d.name == "total_ms"]
    rows = [r.model_dump(mode="json") for r in repair_rows(decls, rust_oracle, RepairSettings(max_share=1.0, max_compiler_solvable=1.0, in_crate="never")).rows]
    assert rows
    for row in rows:
        assert "root" not in row["crate_spot"]  # a row reads the same wherever its sources sit
        assert repair_task(row).crate_spot is None  # the run says where its crates are
        spot = repair_task(row, {"units": str(root.resolve())}).crate_spot
        text = (Path(spot.root) / spot.path).read_bytes()[spot.start_byte:spot.end_byte].decode()
        assert text == ORIGINAL and Path(spot.root) == root.resolve()


def test_the_picker_and_the_model_after_a_baseline_see_the_failed_tests(rust_oracle, tmp_path):
    """A user who has tests runs them: rejection sampling skips a sample that fails them, and a
    baseline's answer that fails them does not stand (the model is asked)."""
    from training.evaluation.after_baseline import after_baseline
    from training.evaluation.evaluate import evaluate
    from training.run.profile import EvalSettings

    t = task(crate(tmp_path / "units"))
    wrong = "```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"
    right = "```rust\n" + ORIGINAL.replace("n * scale(unit)", "scale(unit) * n") + "\n```"
    settings = EvalSettings(decoding="sample", samples=2, k=1, pick="compiled")
    judge = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo"))
    picked = evaluate(settings, lambda tasks: [[wrong, right]], judge, [t], "samples")["per_task"]["t"]
    assert picked["picked"] == 1 and picked["passed"] == 1
    assert picked["solved_by_samples"] == {"1": False, "2": True}  # one sample: the wrong value, which fails
    blind = evaluate(settings, lambda tasks: [[wrong, right]], Judge({"rust": rust_oracle}), [t], "samples")
    assert blind["per_task"]["t"]["picked"] == 0  # without tests the wrong value is the first that counts

    asked = []
    model = lambda tasks, k=None: asked.extend(tasks) or [[right] for _ in tasks]  # noqa: E731
    answers, helped = after_baseline(lambda tasks: [[wrong] for _ in tasks], model, judge)([t])
    assert asked and answers == [[right]] and "t" not in helped


def test_a_test_run_is_kept_for_the_next_evaluation(rust_oracle, tmp_path):
    """`[eval] verdicts`: the same answer in the same crate is not run again by a later judge."""
    from oracles.settings import OracleSettings

    t = task(crate(tmp_path / "units"))
    wrong = "```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"
    runs = []
    for _ in range(2):
        oracle = crate_tests_oracle(OracleSettings(), str(tmp_path / "verdicts"))
        assert not Judge({"rust": rust_oracle}, crate_tests=oracle).judge([t], [wrong])[0].passed
        runs.append(oracle.stats.compiler_runs)
    assert runs == [2, 0]  # the crate as it is and the answer, then neither


def test_synth_eval_reports_what_the_crate_tests_cost(tmp_path):
    """`synth eval --answers FILE` with `[eval] crate_tests`: pass@1 needs the tests, and the result
    says how many crates had tests and how many runs were made or read back."""
    import json

    from oracles.settings import OracleSettings
    from training.evaluation.evaluate import run_eval
    from training.run.profile import EvalSettings

    t = task(crate(tmp_path / "units"))
    (tmp_path / "tasks.jsonl").write_text(t.model_dump_json() + "\n")
    wrong = "```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"
    (tmp_path / "answers.jsonl").write_text(json.dumps({"id": "t", "answer": wrong}) + "\n")
    settings = EvalSettings(decoding="greedy", crate_tests=True, verdicts=str(tmp_path / "verdicts"))
    for stored in (0, 2):
        result = run_eval(settings, None, None, OracleSettings(), tmp_path / "eval.json",
                          tasks_path=str(tmp_path / "tasks.jsonl"), answers=str(tmp_path / "answers.jsonl"))
        repair = result["families"]["repair"]
        assert (repair["compile_rate"], repair["pass_at_1"], repair["tasks_with_tests"]) == (1.0, 0.0, 1)
        assert result["oracle"]["crate_tests"] == {"crates_with_tests": 1, "crates_without": 0,
                                                   "runs": 2 - stored, "stored": stored}


SIDE_BY_SIDE = """

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    static PING: AtomicBool = AtomicBool::new(false);
    static PONG: AtomicBool = AtomicBool::new(false);

    fn meet(mine: &AtomicBool, theirs: &AtomicBool) {  // passes only beside the other test
        mine.store(true, Ordering::SeqCst);
        let start = Instant::now();
        while !theirs.load(Ordering::SeqCst) {
            assert!(start.elapsed() < Duration::from_secs(3), "ran alone");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn ping() { meet(&PING, &PONG) }

    #[test]
    fn pong() { meet(&PONG, &PING) }
}
"""


def test_a_crates_tests_run_side_by_side(tmp_path):
    """The judge runs one suite at a time, on as many threads as the oracle runs compilers: a suite
    written for `cargo test`'s threads passes (on one thread it waits on each test in turn)."""
    root = crate(tmp_path / "units", SIDE_BY_SIDE)
    (verdict,) = crate_tests_oracle(OracleSettings(jobs=2)).test([Splice(str(root), "src/lib.rs", 0, 0, "")])
    assert verdict.passed and verdict.tests.passed == verdict.tests.total == 2


def test_a_suite_that_denies_warnings_is_run_for_its_tests(tmp_path):
    """cc's `#![cfg_attr(test, deny(warnings))]` meets a lint newer than cc (`field 0 is never read`):
    a test run caps lints, so the suite builds and its tests decide."""
    root = crate(tmp_path / "units")
    lib = root / "src" / "lib.rs"
    lib.write_text("#![cfg_attr(test, deny(warnings))]\nfn never_called() {}\n" + lib.read_text())
    (verdict,) = crate_tests_oracle(OracleSettings(jobs=1)).test([Splice(str(root), "src/lib.rs", 0, 0, "")])
    assert verdict.passed and verdict.tests.passed == verdict.tests.total == 1


def test_a_task_behind_a_feature_runs_its_tests_with_the_feature_on(rust_oracle, tmp_path):
    """A declaration verified with a feature off by default (its module compiled only with it) is
    tested with that feature on: without it the suite holds no test of it, and a wrong value counted."""
    root = tmp_path / "units"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "units"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                     '[features]\nunits = []\n\n[dependencies]\n')
    (root / "src" / "lib.rs").write_text('#[cfg(feature = "units")]\npub mod units;\n\n#[test]\nfn builds() {}\n')
    (root / "src" / "units.rs").write_text(CONTEXT + ORIGINAL + TESTS)
    spot = task(root).crate_spot.model_copy(update={"path": "src/units.rs", "features": ["units"]})
    t = task(root).model_copy(update={"crate_spot": spot})
    wrong = "```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"
    right = "```rust\n" + ORIGINAL.replace("n * scale(unit)", "scale(unit) * n") + "\n```"
    got = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo")).judge([t, t], [wrong, right])
    assert got[0].solved and got[0].tests == 0.0 and not got[0].passed
    assert got[1].passed and got[1].tests == 1.0


METER = """pub struct Meter {
    count: u64,
}

impl Meter {
    /// A meter that has counted nothing yet.
    pub fn new() -> Meter {
        Meter { count: 0 }
    }

    /// Counts `n` more and gives back the total so far.
    pub fn add(&mut self, n: u64) -> u64 {
        self.count += n;
        self.count
    }
}

/// Twice the value.
pub fn double(n: u64) -> u64 {
    n * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        let mut meter = Meter::new();
        meter.add(2);
        assert_eq!(meter.add(3), 5);
        assert_eq!(double(4), 8);
    }
}
"""


def test_a_codegen_answer_runs_its_crates_tests_in_place(rust_oracle, tmp_path):
    """The doc lane says where a function checked standalone sits in its crate; its codegen task
    runs an answer there (a method: the members of the answer's impl block over the method's span),
    so a body that compiles but computes another value does not pass."""
    from synth.doctasks.documented import doc_lane
    from synth.extract.extract import ExtractOptions, extract_paths
    from synth.tasks.split import codegen_task

    root = crate(tmp_path / "meter")
    (root / "src" / "lib.rs").write_text(METER)
    rows, _ = doc_lane(extract_paths([str(root)], ExtractOptions(jobs=1)).declarations, rust_oracle)
    rows = {r.must_define[0]: r.model_dump(mode="json") for r in rows}
    assert "root" not in rows["add"]["crate_spot"] and codegen_task(rows["add"]).crate_spot is None
    tasks = {name: codegen_task(rows[name], {"meter": str(root.resolve())}) for name in ("add", "double")}
    add, double = rows["add"]["response"], rows["double"]["response"]
    answers = [(tasks["add"], add, True),
               (tasks["add"], add.replace("self.count += n;", "self.count = self.count + n;"), True),
               (tasks["add"], add.replace("self.count += n;", "self.count = n;"), False),  # compiles, counts 3 for 5
               (tasks["double"], double.replace("n * 2", "n + n"), True),
               (tasks["double"], double.replace("n * 2", "n + 2"), False)]
    judge = Judge({"rust": rust_oracle}, crate_tests=build_oracle("cargo"))
    got = judge.judge([t for t, _, _ in answers], [f"```rust\n{a}\n```" for _, a, _ in answers])
    assert all(o.solved and o.tests is not None for o in got)  # rustc is content with every one
    assert [o.passed for o in got] == [right for _, _, right in answers]
    blind = Judge({"rust": rust_oracle}).judge([answers[2][0], answers[4][0]], [answers[2][1], answers[4][1]])
    assert all(o.passed and o.tests is None for o in blind)  # without its crate's tests a wrong value counts


def test_the_grpo_reward_runs_the_crates_tests_where_its_profile_says(rust_oracle, tmp_path):
    """`[grpo] crate_tests`: the reward's `tests` (and its `layered` tier) see the crate's tests, so
    a wrong value that compiles earns what a failing answer earns, as in evaluation; off, it
    earns a pass."""
    from training.grpo import grpo_judge
    from training.rewards import CompilerRewards
    from training.run.profile import EvalSettings, GrpoSettings, Profile

    t = task(crate(tmp_path / "units"))
    wrong = "```rust\n" + ORIGINAL.replace("scale(unit)", "scale(Unit::Millis)") + "\n```"
    right = "```rust\n" + ORIGINAL.replace("n * scale(unit)", "scale(unit) * n") + "\n```"
    got = {}
    for on in (True, False):
        profile = Profile(model="unused", grpo=GrpoSettings(crate_tests=on), eval=EvalSettings(verdicts=str(tmp_path / "v")))
        rewards = {f.__name__: f for f in CompilerRewards(grpo_judge(profile, [t], {"rust": rust_oracle}), {"t": t}).functions()}
        got[on] = {name: rewards[name](None, [wrong, right], ["t", "t"]) for name in ("compile", "tests", "layered")}
    assert got[True] == {"compile": [1.0, 1.0], "tests": [0.0, 1.0], "layered": [0.75, 1.0]}
    assert got[False] == {"compile": [1.0, 1.0], "tests": [None, None], "layered": [1.0, 1.0]}
