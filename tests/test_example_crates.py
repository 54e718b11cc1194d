"""The crate lists `make setup` installs with apt (examples/*/crates.txt) hold every crate their
configs read (examples/*/synth.toml): a list kept by hand beside the config must not go stale
(a source left out is a crate a fresh machine does not have)."""
import re
import tomllib

import pytest
from conftest import ROOT


def packages(path: str) -> set[str]:
    """The Debian packages that may put a registry folder there: `.../ahash-0.7.6` ->
    `librust-ahash-dev`, or one versioned as Debian versions a second major (`librust-ahash-0.7-dev`)."""
    name, version = re.match(r"(.+?)-(\d[\w.+-]*)$", path.rstrip("/").rsplit("/", 1)[-1]).groups()
    name, parts = name.replace("_", "-"), version.split(".")
    return {f"librust-{name}-dev"} | {f"librust-{name}-{'.'.join(parts[:n])}-dev" for n in (1, 2, 3)}


def test_a_registry_folder_names_its_package():
    assert "librust-compiler-builtins-dev" in packages("/usr/share/cargo/registry/compiler_builtins-0.1.70")
    assert {"librust-ahash-dev", "librust-ahash-0.7-dev"} <= packages("/usr/share/cargo/registry/ahash-0.7.6/")
    assert "librust-ahash-0.8-dev" not in packages("/usr/share/cargo/registry/ahash-0.7.6/")


@pytest.mark.parametrize("example", ["loop", "night"])
def test_every_source_of_the_config_is_installed_by_its_list(example):
    folder = ROOT / "examples" / example
    sources = [s["path"] for s in tomllib.loads((folder / "synth.toml").read_text())["sources"]]
    listed = {line.strip() for line in (folder / "crates.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    registry = [p for p in sources if p.startswith("/usr/share/cargo/registry/")]
    assert len(registry) == len(sources) >= 20
    assert sorted(p for p in registry if not packages(p) & listed) == []


def test_the_loops_other_arm_is_its_config_but_for_the_cap():
    """examples/loop/synth_cap25.toml is the other arm of max_compiler_solvable's measurement: the
    loop's config but for the cap and where it writes (a copy by hand went stale once)."""
    def read(name):
        data = tomllib.loads((ROOT / "examples" / "loop" / name).read_text())
        assert data["run"].pop("out").startswith("../../runs/loop")
        assert data["models"]["policy"].pop("model").endswith("/sft/merged")
        return data
    loop, capped = read("synth.toml"), read("synth_cap25.toml")
    assert capped["lanes"]["repair"].pop("max_compiler_solvable") == 0.25
    assert capped == loop
