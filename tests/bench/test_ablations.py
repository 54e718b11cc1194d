"""The ablation arms change one thing: a repair prompt loses exactly its compiler section (the
instruction after it kept), a row's twin differs only in the broken code it shows, and the
ungated arm draws as many rows as the gated one has from every mutant, gate or no gate."""
import json

from benchmarks.ablations import plain_row, twin, ungated_rows, without_diagnostics
from synth.extract.model import Declaration
from synth.mutate.repair import repair_prompt

DECL = Declaration(id="d1", lang="rust", kind="fn", name="twice", path="lib.rs", start_byte=0, end_byte=10,
                   start_line=1, end_line=3, text="fn twice(x: u32) -> u32 {\n    x * 2\n}", context="pub struct S;\n",
                   hash="h1", clean_text="fn twice(x: u32) -> u32 {\n    x * 2\n}", signature="fn twice(x: u32) -> u32")


def row(broken: str, diagnostics: str = "error[E0425]: cannot find value `y`\n --> line 2, column 5") -> dict:
    prompt = repair_prompt(DECL, broken, diagnostics, False)
    return {"id": broken, "task": "repair", "prompt": prompt, "broken": broken, "crate": "c", "operator": "op",
            "provenance": {"decl_id": "d1"},
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": prompt},
                         {"role": "assistant", "content": DECL.text}]}


def test_a_plain_prompt_is_the_prompt_less_its_compiler_section():
    r = row("fn twice(x: u32) -> u32 {\n    y * 2\n}")
    plain = plain_row(r)
    assert "The compiler says" in r["prompt"] and "The compiler says" not in plain["prompt"]
    assert "E0425" not in plain["prompt"] and plain["prompt"].endswith("Reply with the corrected declaration only.")
    assert plain["prompt"] == r["prompt"].replace(
        "\n\nThe compiler says:\nerror[E0425]: cannot find value `y`\n --> line 2, column 5", "")
    assert plain["messages"][1]["content"] == plain["prompt"] and plain["messages"][2] == r["messages"][2]
    assert without_diagnostics(plain["prompt"]) == plain["prompt"]  # nothing more to take out
    assert plain_row({"task": "codegen", "prompt": "x"}) == {"task": "codegen", "prompt": "x"}


def test_a_twin_shows_another_broken_form_and_nothing_else(tmp_path):
    r = plain_row(row("fn twice(x: u32) -> u32 {\n    y * 2\n}"))
    other = twin(r, "fn twice(x: u32) -> u32 {\n    x * 3\n}", "argument_type")
    assert other["prompt"] == r["prompt"].replace("    y * 2", "    x * 3") and other["prompt"] != r["prompt"]
    assert other["messages"][2] == r["messages"][2] and other["gate"] == "none"
    gated = [r, plain_row(row("fn twice(x: u32) -> u32 {\n    x * 2;\n}")), {"task": "doc", "id": "doc"}]
    (tmp_path / "rejected").mkdir()
    (tmp_path / "rejected" / "repair.jsonl").write_text(json.dumps(
        {"decl": "d1", "operator": "argument_type", "kind": "equivalent mutant", "reason": "equivalent mutant (still compiles)",
         "broken": "fn twice(x: u32) -> u32 {\n    x + x\n}"}) + "\n")
    drawn = ungated_rows(tmp_path, gated, seed=0)
    assert drawn["pool"] == {"gated": 2, "still_compile": 1, "original_fails": 0}
    assert len([x for x in drawn["rows"] if x["task"] == "repair"]) == 2 and drawn["rows"][0]["id"] == "doc"


def test_arms_are_compared_on_the_repair_tasks_both_answered():
    """A model's evaluation of both families (the loop's SFT) is read on its repair tasks only."""
    from benchmarks.ablations import compared
    task = lambda family, solved, group: {"family": family, "solved": solved, "pass@1": solved, "group": group}  # noqa: E731
    evals = {"a": {"per_task": {"r1": task("repair", 0.0, "g1"), "r2": task("repair", 1.0, "g2")}},
             "b": {"per_task": {"r1": task("repair", 1.0, "g1"), "r2": task("repair", 1.0, "g2"),
                                "c1": task("codegen", 0.0, "g3"), "c2": task("codegen", 0.0, "g4")}},
             "best_free": {"per_task": {"r1": task("repair", 1.0, "g1"), "r2": task("repair", 0.0, "g2")}}}
    got = compared(evals, "a", "b", None, 0)
    assert got["tasks"] == 2 and got["a"] == 0.5 and got["b"] == 1.0 and got["best_free"] == 0.5
    assert got["difference"]["delta"] == 0.5
    assert compared(evals, "a", "b", {"r2"}, 0)["difference"]["delta"] == 0.0
