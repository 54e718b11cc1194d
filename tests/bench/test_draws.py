"""The loop's picked repairer drawn several times (`synth bench loop --draws N`): each draw is read
against the compiler's help on its own (its rate, its paired difference, its rate beyond the
compiler), and the bar is read on the means."""
from benchmarks.loop_commands import draws_figures


def result(passed: set[str]) -> dict:
    ids = ("t1", "t2", "t3", "t4")
    per_task = {t: {"family": "repair", "solved": float(t in passed), "pass@1": float(t in passed), "group": t}
                for t in ids}
    return {"per_task": per_task, "families": {"repair": {"pass_at_1": len(passed) / len(ids)}}}


def test_each_draw_is_read_against_the_compilers_help_and_the_bar_on_their_mean():
    best_free = result({"t1", "t2"})
    got = draws_figures(best_free, [result({"t3"}), result({"t1", "t2", "t3", "t4"})], "repair", 0)
    assert got["draws"] == 2 and got["beyond_compiler_tasks"] == 2  # t3 and t4: best_free fails them
    assert [e["beyond_compiler"] for e in got["each"]] == [0.5, 1.0]
    assert [e["vs_best_free"]["delta"] for e in got["each"]] == [-0.25, 0.5]
    assert got["mean"] == {"pass_at_1": 0.625, "vs_best_free": 0.125, "beyond_compiler": 0.75}
    # against the compiler's help tried as often as the model: its own keys, its own beyond set
    search = draws_figures(result({"t1", "t2", "t3"}), [result({"t3"}), result({"t1", "t2", "t3", "t4"})], "repair", 0,
                           "free_search")
    assert search["beyond_compiler_tasks"] == 1 and search["mean"] == {"pass_at_1": 0.625, "vs_free_search": -0.125,
                                                                       "beyond_compiler": 0.5}
