"""A night's run killed and resumed (the night bench's own arms, on one small Debian crate): SIGTERM
at a third of the work, SIGKILL at two thirds, each resumed; the outputs are the bytes of an
uninterrupted run, no stored verdict is compiled again, no temp folder is left."""
from pathlib import Path

import pytest

from benchmarks.night_bench import (NIGHT, arm_config, cold_run, differences, killed_and_resumed, left_in,
                                    night_sources, redone_verdicts, stored_verdicts)
from oracles.cache import VerdictCache
from oracles.verdict import Verdict

pytestmark = pytest.mark.slow  # three runs of the compiler over a crate

# A crate of the night corpus whose verdicts do not depend on what shares their batch (on
# fallible-iterator a trait impl's mutant lost its E0053 in one batch and not in another).
CRATE = Path("/usr/share/cargo/registry/ryu-1.0.2")


def test_a_verdict_stored_twice_is_counted_on_disk(tmp_path):
    verdict = Verdict(candidate_id="c", oracle="rustc", toolchain="rustc 1", passed=True)
    store = VerdictCache(tmp_path)
    store.put("k", verdict)
    store.put("other", verdict)
    assert store.redone() == 0
    store.put("k", verdict)
    store.close()
    assert VerdictCache(tmp_path).redone() == 1  # another process (a resumed run) reads it


def test_a_night_too_long_for_one_sitting_names_the_arms_it_leaves_out(capsys):
    from synth.cli.args import build_parser
    parser = build_parser({"night": "benchmarks.night_bench"})
    assert parser.parse_args(["bench", "night", "--skip", "killed,ray"]).skip == ("killed", "ray")
    assert parser.parse_args(["bench", "night"]).skip == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "night", "--skip", "killed,dataset"])
    assert "unknown arm 'dataset': killed, ray or crates" in capsys.readouterr().err


def test_the_night_config_names_installed_crates_the_loop_does_not_use():
    loop = {s.name for s in night_sources(NIGHT.parent.parent / "loop" / "synth.toml")}
    night = night_sources(NIGHT)
    assert len(night) >= 60 and not loop & {s.name for s in night}
    assert CRATE in night


def test_killed_twice_and_resumed_gives_the_uninterrupted_bytes_and_recompiles_nothing(tmp_path):
    if not CRATE.is_dir():
        pytest.skip("make night-corpus installs the night's crates")
    cold = cold_run(arm_config(NIGHT, [CRATE], tmp_path / "cold"), tmp_path / "cold")
    verdicts = stored_verdicts(tmp_path / "cold" / "cache")
    assert verdicts > 100 and cold["tmp_left"] == []
    killed = killed_and_resumed(arm_config(NIGHT, [CRATE], tmp_path / "killed"), tmp_path / "killed", verdicts,
                                wall=cold["wall_s"] * 3)
    assert killed["exit_codes"][:2] == [143, -9] and killed["exit_codes"][2] == 0, killed
    first, second = killed["killed_at_verdicts"]
    assert verdicts / 3 <= first < second < verdicts, killed  # each kill came mid-work
    assert differences(tmp_path / "cold" / "run", tmp_path / "killed" / "run") == []
    # no verdict stored before a kill is compiled again after it (a run alone compiles a few twice)
    assert redone_verdicts(tmp_path / "killed" / "cache") <= redone_verdicts(tmp_path / "cold" / "cache")
    assert left_in(tmp_path / "killed" / "tmp") == []
    # the last segment compiled only what no segment before had stored
    compiled = sum(lane["candidates_compiled"] for lane in killed["final_segment"].values())
    assert 0 < compiled <= verdicts - second + redone_verdicts(tmp_path / "cold" / "cache"), killed
