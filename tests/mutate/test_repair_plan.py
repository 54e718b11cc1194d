"""`synth plan` prices a repair run's compiling from what it measured per crate: the mutants a run
would compile (made as the run makes them, less those whose verdict the cache holds), each
crate's set-up and seconds per mutant, and the stage's seconds per second of checks."""
import pytest

from synth.lanes.repair import compile_seconds
from synth.lanes.estimate import DEFAULT_COMPILE_S


def test_each_crate_is_priced_from_its_own_figures_and_a_new_one_from_their_mean():
    measured = {"seconds": 30.0, "crates_compiled": {"a": [100, 12.0, 2.0], "b": [50, 8.0, 3.0]}}
    # a: 2 s set-up + 0.1 s a mutant; b: 3 s + 0.1 s; the stage took 30 s for 20 s of checks (x1.5)
    assert compile_seconds({"a": 40, "b": 10}, measured, 0.5) == pytest.approx(1.5 * ((2 + 4) + (3 + 1)))
    # an unmeasured crate: the mean set-up (2.5 s) and the mean seconds a mutant (15 / 150)
    assert compile_seconds({"c": 30}, measured, 0.5) == pytest.approx(1.5 * (2.5 + 3))
    assert compile_seconds({"a": 0}, measured, 0.5) == 0  # a crate with nothing to compile costs nothing


def test_without_a_measured_run_the_global_rate_is_used():
    assert compile_seconds({"a": 40}, {}, DEFAULT_COMPILE_S) == pytest.approx(40 * DEFAULT_COMPILE_S)
    assert compile_seconds({"a": 40}, {"seconds": 5.0, "crates_compiled": {}}, 0.2) == pytest.approx(8.0)
