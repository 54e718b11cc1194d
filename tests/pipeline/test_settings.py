"""Every key of `synth.toml` is read by something and has one default, written once: no engine
keeps a twin of a lane's or an oracle's settings with its own copy of a default."""
from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from synth.settings.config import config_model
from synth.settings.strict import LaneSettings
from synth.lanes import LANES

ROOT = Path(__file__).resolve().parents[2]
CODE = [p for d in ("synth", "oracles", "training") for p in sorted((ROOT / d).rglob("*.py"))]

# Fields that share a key's name and default literal without being its twin: each receives the
# value from the key (or is another thing of the same name), and says so here.
NOT_TWINS = {
    ("seed", "Mix"): "mix.toml's own seed (`synth assemble`), not the run's",
    ("seed", "LocalSampler"): "the sampling seed its callers pass (the run's or the profile's)",
    ("seed", "ToolRun"): "the run's seed, given by the lane",
    ("free", "Price"): "whether a price table entry costs nothing",
    ("free", "LLMRequest"): "copied from the model into each request",
    ("timeout_s", "Limits"): "a sandboxed process's limit",
    ("timeout_s", "VoxSettings"): "a `vox check`'s limit",
    ("cache_dir", "RunContext"): "the run's cache folder, given by the run's setup",
}


def _knobs(model: type[BaseModel], seen: set) -> list[tuple[type, str]]:
    """(settings class, key) of every table reachable from `model`."""
    if model in seen:
        return []
    seen.add(model)
    out = []
    for name, field in model.model_fields.items():
        out.append((model, name))
        for typ in _flatten(field.annotation):
            if isinstance(typ, type) and issubclass(typ, BaseModel):
                out += _knobs(typ, seen)
    return out


def _flatten(annotation) -> list:
    return [annotation, *(t for arg in typing.get_args(annotation) for t in _flatten(arg))]


def _literal_defaults(paths: list[Path]) -> dict[str, list[tuple[str, str, str]]]:
    """key name -> (class, file, default's source) for every class field whose default is written
    out as a literal (`name: T = 3`, `Field(3, ...)`), not taken from another class."""
    found: dict[str, list] = {}
    for path in paths:
        for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value):
                    continue
                value = stmt.value
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field" and value.args:
                    value = value.args[0]
                if isinstance(value, ast.Constant) and value.value not in (None, "", False, 0):
                    found.setdefault(stmt.target.id, []).append((cls.name, path.name, repr(value.value)))
    return found


def find_twins(paths: list[Path]) -> list[str]:
    """Keys whose default is written out more than once (in its own class or any other: a class
    may take the default from the one place that writes it)."""
    literals, twins = _literal_defaults(paths), []
    for owner, name in _knobs(config_model(LANES), set()):
        default = repr(owner.model_fields[name].default)
        written = [f"{path} {cls}" for cls, path, literal in literals.get(name, [])
                   if literal == default and (name, cls) not in NOT_TWINS
                   and not (issubclass(owner, LaneSettings) and cls.endswith("Settings") and cls != owner.__name__)]
        if len(written) > 1:  # another lane's key of the same name is that lane's own (above)
            twins.append(f"{owner.__name__}.{name} = {default} written in {', '.join(written)}")
    return twins


def find_unread(paths: list[Path]) -> list[str]:
    text = [path.read_text() for path in paths]
    return [f"{owner.__name__}.{name}" for owner, name in _knobs(config_model(LANES), set())
            if not any(re.search(rf"\.{name}\b|[\"']{name}[\"']", source) for source in text)]


def test_every_config_key_has_one_default_and_a_reader():
    assert len(_knobs(config_model(LANES), set())) > 60  # every table, the lanes' included
    assert not find_twins(CODE)
    assert not find_unread(CODE)


def test_the_check_can_fail(tmp_path):
    """An engine class repeating `max_share = 0.25` is a twin; a key nothing reads is found."""
    twin = tmp_path / "engine.py"
    twin.write_text("class RepairEngineConfig:\n    max_share: float = 0.25\n")
    assert find_twins([*CODE, twin]) == ["RepairSettings.max_share = 0.25 written in settings.py RepairSettings, engine.py RepairEngineConfig"]
    assert "RepairSettings.max_share" in find_unread([twin])


def test_cli_flags_take_their_defaults_from_the_settings():
    from oracles.settings import OracleSettings
    from synth.cli.args import build_parser
    from synth.mutate.repair import RepairSettings
    mutate = build_parser({}).parse_args(["mutate", "x", "--out", "o"])
    assert (mutate.max_share, mutate.in_crate, mutate.diff) == (RepairSettings().max_share, RepairSettings().in_crate,
                                                                RepairSettings().diff)
    assert (mutate.jobs, mutate.vox) == (OracleSettings().jobs, OracleSettings().vox)


def test_the_old_name_of_the_lane_tables_is_still_read(tmp_path):
    from synth.settings.config import ConfigError, load_config
    (tmp_path / "src").mkdir()
    text = '[[sources]]\npath = "src"\nlang = "rust"\n\n[{}.repair]\nmax_share = 0.5\n'
    (tmp_path / "old.toml").write_text(text.format("stages"))
    (tmp_path / "new.toml").write_text(text.format("lanes"))
    old, new = load_config(tmp_path / "old.toml", LANES), load_config(tmp_path / "new.toml", LANES)
    assert old.lane_settings()["repair"].max_share == new.lane_settings()["repair"].max_share == 0.5
    assert any("[stages.*] is now [lanes.*]" in note for note in old.notes) and not new.notes
    (tmp_path / "old.toml").write_text(text.format("stages").replace("max_share", "max_shar"))
    with pytest.raises(ConfigError, match=r"unknown key 'stages.repair.max_shar' \(did you mean 'max_share'\?\)"):
        load_config(tmp_path / "old.toml", LANES)


def test_no_flag_writes_a_knob_default_again():
    """A flag named after a knob of the oracles or the repair lane takes its default from there (a
    bench flag with a default of its own, e.g. `bench --in-crate always`, is another setting)."""
    from oracles.settings import OracleSettings
    from synth.mutate.repair import RepairSettings
    knobs = {name: field.default for settings in (OracleSettings, RepairSettings)
             for name, field in settings.model_fields.items()}
    tree = ast.parse((ROOT / "synth" / "cli" / "args.py").read_text())
    written = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_argument"):
        flag = next((a.value for a in call.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")), "")
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        name = flag[2:].replace("-", "_")
        if name in knobs and isinstance(default, ast.Constant) and default.value == knobs[name]:
            written.append(flag)
    assert not written, f"flags that write a knob's default again: {written}"
