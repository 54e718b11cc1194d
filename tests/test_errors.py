"""One root for every error synth raises on purpose, and one place that turns it into a message
and an exit status (`synth`'s main)."""
import importlib
import inspect

import pytest
from conftest import ROOT

from oracles.errors import InputError, SynthError
from synth.cli.main import main


def _project_modules():
    for package in ("synth", "oracles", "training"):
        for path in sorted((ROOT / package).rglob("*.py")):
            yield ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_every_exception_class_of_the_project_derives_from_synth_error():
    found = {}
    for name in _project_modules():
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found[f"{name}.{cls_name}"] = cls
    assert len(found) >= 25  # the walk saw them (it cannot pass by finding none)
    assert sorted(k for k, cls in found.items() if not issubclass(cls, SynthError)) == []
    assert all(cls.exit_code in (1, 2, 3) for cls in found.values())


@pytest.mark.parametrize("argv, code, message", [
    (["assemble", "--mix", "no-such-mix.toml", "--out", "x"], 2, "synth: error: no-such-mix.toml: no such mix file"),
    (["report", "no-such-run"], 2, "synth: error: "),
    (["run", "--config", "no-such.toml"], 2, "synth: error: "),
])
def test_main_turns_an_input_error_into_exit_2_and_one_line(argv, code, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "Traceback" not in err and len(err.splitlines()) == 1


def test_an_error_keeps_the_builtin_it_specialises():
    from synth.settings.config import ConfigError
    from synth.tasks.task import load_tasks
    assert issubclass(ConfigError, (InputError, ValueError))
    with pytest.raises(FileNotFoundError):  # a MissingInput is still what callers caught before
        load_tasks("no-such-tasks.jsonl")
