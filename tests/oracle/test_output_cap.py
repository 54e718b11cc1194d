"""A check whose diagnostics run past the sandbox's output cap (8 MiB; a batch of a night's crate
did) is read as cut, not crashed on nor trusted: its batch is checked again in smaller parts and
every verdict is the one its candidate gets alone (here with the cap lowered to 3 KB), in a crate
and standalone. A check of one candidate alone, cut, keeps its pass or fail and says that its
diagnostics are incomplete."""
from conftest import EXAMPLE_CRATE

import oracles.isolation.sandbox as sandbox
from oracles.cargo.crate import CargoCrateOracle
from oracles.isolation.sandbox import Limits, Sandbox
from oracles.verdict import json_lines
from oracles.rustc.oracle import RustOracle
from oracles.verdict import Candidate
from oracles.verdict import Splice

FUNCTIONS = ["mean", "median", "variance", "min_max", "cumulative_sum", "gcd", "lcm"]


def test_a_line_cut_short_is_reported_not_raised():
    assert json_lines('{"a": 1}\nnot json\n{"b": "cut her') == ([{"a": 1}], True)
    assert json_lines('{"a": 1}\n') == ([{"a": 1}], False)


def test_a_batch_whose_output_is_cut_gets_each_mutant_its_own_verdict(monkeypatch):
    path = EXAMPLE_CRATE / "src" / "stats.rs"
    text = path.read_text()
    oracle = CargoCrateOracle(cache=None)

    def jobs():
        out = []
        for name in FUNCTIONS:
            start = text.index(f"pub fn {name}(")
            end = text.index("\n}\n", start) + 2
            original = text[start:end]
            broken = original.replace("{\n", '{\n    let _unused: u8 = "not a number";\n', 1)
            out.append(oracle.job(Splice(str(EXAMPLE_CRATE), "src/stats.rs", len(text[:start].encode()),
                                         len(text[:end].encode()), broken), name, original, "test"))
        return out

    alone = [oracle.check([job])[0] for job in jobs()]
    assert all(not v.passed for v in alone)
    monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 3000)
    together = oracle.check(jobs())
    assert oracle.stats.untrusted.get("output cut at the cap", 0) > 0  # the cap was reached
    assert all(a.same_result(b) for a, b in zip(alone, together))
    oracle.close()


def test_a_standalone_batch_whose_output_is_cut_is_checked_again_in_parts(monkeypatch):
    oracle = RustOracle(cache=None)
    candidates = [Candidate.of(f'pub fn f{k}() -> u{8 * 2 ** (k % 4)} {{\n    let x: u8 = "{k}";\n    x\n}}\n')
                  for k in range(12)]
    alone = [oracle.check([c])[0] for c in candidates]
    assert all(not v.passed for v in alone), [(v.passed, v.mode, [d.render() for d in v.diagnostics]) for v in alone]
    monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 6000)  # one candidate's output fits, twelve do not
    together = oracle.check(candidates)
    assert oracle.stats.untrusted_batches.get("output cut at the cap", 0) > 0
    assert all(a.same_result(b) for a, b in zip(alone, together))


def test_the_sandbox_says_when_it_cut_an_output_even_at_a_line_end(monkeypatch):
    monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 3)
    with Sandbox().workdir() as wd:
        cut = Sandbox().run(["sh", "-c", "printf 'ab\\ncd\\n'"], wd, limits=Limits(timeout_s=5))
        monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 6)
        whole = Sandbox().run(["sh", "-c", "printf 'ab\\ncd\\n'"], wd, limits=Limits(timeout_s=5))
    assert (cut.stdout, cut.cut) == ("ab\n", True)  # whole lines: only the sandbox can tell
    assert (whole.stdout, whole.cut) == ("ab\ncd\n", False)


MANY_ERRORS = "pub fn f() {\n" + "".join(f'    let _x{k}: u8 = "{k}";\n' for k in range(30)) + "}\n"


def test_a_solo_check_cut_keeps_its_failure_and_says_its_diagnostics_are_incomplete(monkeypatch):
    oracle = RustOracle(cache=None)
    whole = oracle.check_solo(Candidate.of(MANY_ERRORS))
    assert not whole.passed and len(whole.errors) == 30 and "output-cut" not in [d.code for d in whole.diagnostics]
    monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 3000)
    cut = oracle.check_solo(Candidate.of(MANY_ERRORS))
    assert not cut.passed and 0 < len(cut.errors) < 30
    assert cut.diagnostics[-1].code == "output-cut" and "missing" in cut.diagnostics[-1].message


def test_a_solo_check_in_a_crate_cut_says_so(monkeypatch):
    path = EXAMPLE_CRATE / "src" / "stats.rs"
    text = path.read_text()
    start = text.index("pub fn mean(")
    end = text.index("\n}\n", start) + 2
    broken = text[start:end].replace("{\n", "{\n" + "".join(f'    let _x{k}: u8 = "{k}";\n' for k in range(30)), 1)
    splice = Splice(str(EXAMPLE_CRATE), "src/stats.rs", len(text[:start].encode()), len(text[:end].encode()), broken)
    oracle = CargoCrateOracle(cache=None)
    whole = oracle.check_solo(splice)
    monkeypatch.setattr(sandbox, "OUTPUT_CAP_BYTES", 3000)
    cut = oracle.check_solo(splice)
    oracle.close()
    assert not whole.passed and "output-cut" not in [d.code for d in whole.diagnostics]
    assert not cut.passed and "output-cut" in [d.code for d in cut.diagnostics]
    assert len(cut.errors) < len(whole.errors)
