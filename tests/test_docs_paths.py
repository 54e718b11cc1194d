"""Every path of the project that README.md and SHAPE.md name exists (a moved module takes its
docs with it)."""
import itertools
import re

from conftest import ROOT

TOP = ("synth", "oracles", "training", "benchmarks", "tests", "examples", "prompts")
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(TOP) + r")/[\w/{},.-]*[\w}/])")


def expand(path: str) -> list[str]:
    """`synth/{a,b}.py` -> `synth/a.py`, `synth/b.py`."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def named_paths(text: str) -> set[str]:
    return {p.rstrip(".,") for m in PATH.finditer(text) for p in expand(m.group(1))}


def test_the_path_reader_finds_braced_and_plain_paths():
    found = named_paths("see `synth/tasks/{judge,baselines}/`, synth/rows/row.py. and tests/x.py")
    assert found == {"synth/tasks/judge/", "synth/tasks/baselines/", "synth/rows/row.py", "tests/x.py"}


def test_every_path_the_docs_name_exists():
    missing = {doc: sorted(p for p in named_paths((ROOT / doc).read_text()) if not (ROOT / p).exists())
               for doc in ("README.md", "SHAPE.md")}
    assert missing == {"README.md": [], "SHAPE.md": []}
