"""`synth plan` prices a repair run's compiling from what it measured per crate: the mutants a run
would compile (made as the run makes them, less those whose verdict the cache holds), each
crate's set-up and seconds per mutant, and the stage's seconds per second of checks."""
import pytest

from synth.lanes.repair import compile_seconds
from synth.lanes.estimate import DEFAULT_COMPILE_S, FIRST_RUN_S


def test_each_crate_is_priced_from_its_own_figures_and_a_new_one_from_their_mean():
    measured = {"seconds": 30.0, "crates_compiled": {"a": [100, 12.0, 2.0], "b": [50, 8.0, 3.0]}}
    # a: 2 s set-up + 0.1 s a mutant; b: 3 s + 0.1 s; the stage took 30 s for 20 s of checks (x1.5)
    assert compile_seconds({"a": 40, "b": 10}, measured, 0.5) == pytest.approx(1.5 * ((2 + 4) + (3 + 1)))
    # an unmeasured crate: the mean set-up (2.5 s) and the mean seconds a mutant (15 / 150)
    assert compile_seconds({"c": 30}, measured, 0.5) == pytest.approx(1.5 * (2.5 + 3))
    assert compile_seconds({"a": 0}, measured, 0.5) == 0  # a crate with nothing to compile costs nothing


def test_a_first_run_is_priced_from_the_reference_and_a_run_without_crate_checks_from_the_global_rate():
    first = compile_seconds({"a": 40, "b": 10, "c": 0}, {}, DEFAULT_COMPILE_S)
    assert first == pytest.approx(2 * FIRST_RUN_S["repair_crate"] + 50 * FIRST_RUN_S["repair_mutant"])
    assert first > 50 * DEFAULT_COMPILE_S  # a mutant costs more than one batched standalone check
    assert compile_seconds({"a": 40}, {"seconds": 5.0, "crates_compiled": {}}, 0.2) == pytest.approx(8.0)


def test_a_run_that_compiles_nothing_keeps_the_figures_the_next_plan_prices_from(tmp_path, capsys):
    import json
    from synth.cli.main import main
    crate = tmp_path / "tiny"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n')
    lib = crate / "src" / "lib.rs"
    original = "".join(f"pub fn add_{i}(x: u64, y: u64) -> u64 {{\n    let z = x + y * {i};\n    z\n}}\n\n"
                       for i in range(4))
    lib.write_text(original)
    config = tmp_path / "synth.toml"
    config.write_text(f'[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "{crate}"\nlang = "rust"\n\n'
                      '[lanes.repair]\nenabled = true\nin_crate = "always"\n')

    def synth(*argv) -> dict:
        assert main([*argv, "--config", str(config), "--json"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    def plan_after_an_edit() -> dict:
        lib.write_text(original.replace("x + y * 2", "x * 2 + y"))  # one function changes
        (row,) = synth("plan")["stages"]
        lib.write_text(original)
        return row

    assert synth("run")["stages"]["repair"]["candidates_compiled"] > 0
    first = plan_after_an_edit()
    again = synth("run")  # nothing changed: nothing compiled, nothing measured
    assert again["stages"]["repair"]["candidates_compiled"] == 0
    second = plan_after_an_edit()
    assert first["attrition"] == second["attrition"] == "measured" and first["compiler_candidates"] > 0
    assert second == first  # priced from the run that measured, not from the global rate
