"""Repair answers as edits (`repair_answers = "edit"`): the SEARCH/REPLACE blocks a row teaches
rebuild its fixed declaration exactly; an evaluation asks for them, applies what the model replies
to the declaration its prompt shows and judges the result on real rustc, at every turn; an edit
that names no line of the declaration answers nothing."""
import pytest

from synth.prompting.templates import DECLARATION_INSTRUCTION
from synth.tasks.completion import answer_code, defines
from synth.tasks.edits import EDIT_INSTRUCTION, answer_for, apply_edit, edit_row, render_edit
from synth.tasks.judge import Judge
from synth.tasks.task import Task
from training.evaluation.evaluate import evaluate
from training.evaluation.model_answers import ModelAnswers
from training.run.profile import EvalSettings

CONTEXT = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n"
FIXED = "pub fn size(s: &str) -> usize {\n    let n = len_of(s);\n    n\n}"
BROKEN = "pub fn size(s: &str) -> usize {\n    let n = len_of();\n    n\n}"  # E0061


@pytest.mark.parametrize("broken, fixed", [
    (BROKEN, FIXED),
    ("fn f() {\n    if a {\n        x();\n    }\n    if b {\n        x();\n    }\n}",  # the changed line repeats
     "fn f() {\n    if a {\n        x();\n    }\n    if b {\n        y();\n    }\n}"),
    ("fn f() {\n    a();\n}", "fn f() {\n    a();\n    b();\n}"),  # an insertion
    ("fn f() {\n    a();\n    b();\n}", "fn f() {\n    a();\n}"),  # a deletion
    ("fn f(x: u8) -> bool {\n    let y = x;\n    g(y)\n}", "fn f(x: u8) -> u8 {\n    let y = x;\n    h(y)\n}"),  # two
])
def test_an_edit_rebuilds_the_fixed_declaration_exactly(broken, fixed):
    edit = render_edit(broken, fixed)
    assert edit.count("<<<<<<< SEARCH") >= 1 and apply_edit(broken, edit) == fixed
    assert len(edit.splitlines()) < len(broken.splitlines()) + len(fixed.splitlines()) + 4 * edit.count("SEARCH")


def test_an_edit_that_names_no_line_of_the_declaration_answers_nothing():
    wrong = "<<<<<<< SEARCH\n    let n = len_of(x);\n=======\n    let n = len_of(s);\n>>>>>>> REPLACE"
    assert apply_edit(BROKEN, wrong) is None and apply_edit(BROKEN, f"```rust\n{FIXED}\n```") is None
    task = repair("stuck")
    answer = answer_for(task, wrong, edits=True)
    assert wrong.splitlines()[1] in answer and not defines(answer_code(answer), task.must_define)
    naming = "<<<<<<< SEARCH\npub fn size(s: &String) -> usize {\n=======\npub fn size(s: &str) -> usize {\n>>>>>>> REPLACE"
    assert not defines(answer_code(answer_for(task, naming, edits=True)), task.must_define)  # no turn for it
    spaced = "<<<<<<< SEARCH\n  let n = len_of();\n=======\n    let n = len_of(s);\n>>>>>>> REPLACE"
    assert apply_edit(BROKEN, spaced) == FIXED  # a line's indentation is not what names it
    assert answer_for(task, wrong, edits=False) == wrong


def repair(name: str) -> Task:
    return Task(id=name, lang="rust", family="repair", prompt=f"The declaration ... ({name})\n\n{DECLARATION_INSTRUCTION}",
                reference=FIXED, broken=BROKEN, signature="pub fn size(s: &str) -> usize", kind="fn",
                must_define=["fn size"], context=CONTEXT, before=CONTEXT, after="\n")


class EditingModel:
    """Stands in for a model trained on edits: `fixes` answers the right edit at once, `twice` a
    wrong one first and the right one once rustc's errors come back, `stuck` an edit of a line
    that is not there. It records what it was asked."""
    def __init__(self):
        self.prompts = []

    def greedy(self, prompts, batch_size=8, until=None):
        self.prompts += prompts
        out = []
        for prompt in prompts:
            turn2 = "len_of(0)" in prompt
            line = ("len_of(x)" if "(stuck)" in prompt else
                    "len_of(0)" if "(twice)" in prompt and not turn2 else "len_of(s)")
            search = "len_of(0)" if turn2 else "len_of()"
            out.append(f"<<<<<<< SEARCH\n    let n = {search};\n=======\n    let n = {line};\n>>>>>>> REPLACE"
                       if "(stuck)" not in prompt else
                       f"<<<<<<< SEARCH\n    let n = {line};\n=======\n    let n = len_of(s);\n>>>>>>> REPLACE")
        return out


def test_an_evaluation_with_edits_judges_the_declaration_the_edit_makes(rust_oracle):
    tasks = [repair(n) for n in ("fixes", "twice", "stuck")]
    model = EditingModel()
    settings = EvalSettings(decoding="greedy", k=1, samples=1, turns=2)
    result = evaluate(settings, ModelAnswers(settings, model, edits=True), Judge({"rust": rust_oracle}), tasks, "edits")
    assert all(p.rstrip().endswith(EDIT_INSTRUCTION + "<|im_end|>\n<|im_start|>assistant") for p in model.prompts)
    assert [result["per_task"][n]["solved_by_turn"] for n in ("fixes", "twice", "stuck")] == [[1.0, 1.0], [0.0, 1.0],
                                                                                            [0.0, 0.0]]
    assert result["per_task"]["fixes"]["exact"] == 1.0
    assert len(model.prompts) == 4  # the unreadable edit answered nothing: no turn for it
    assert "len_of(0)" in model.prompts[3] and "error[E0308]" in model.prompts[3]  # its own answer, rustc's word
    first = {a["id"]: a["answer"] for a in result["answers"] if a.get("turn", 1) == 1}
    assert answer_code(first["fixes"]) == FIXED and "<<<<<<< SEARCH" in first["fixes"]  # the reply is kept


def test_a_declaration_row_is_taught_as_an_edit_and_other_rows_are_left_alone():
    prompt = f"The declaration ...\n\n{DECLARATION_INSTRUCTION}"
    row = {"answer_format": "declaration", "broken": BROKEN, "fixed": FIXED, "prompt": prompt, "response": FIXED,
           "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": FIXED}]}
    edited = edit_row(row)
    assert edited["messages"][-1]["content"] == edited["response"] == render_edit(BROKEN, FIXED)
    assert edited["messages"][0]["content"].endswith(EDIT_INSTRUCTION) and edited["answer_format"] == "edit"
    assert row["response"] == FIXED  # the row itself is not changed
    doc = {"prompt": "Write `size`.", "response": FIXED}
    assert edit_row(doc) is doc


def test_the_grpo_reward_judges_an_edit_as_the_declaration_it_makes(rust_oracle):
    from training.rewards import CompilerRewards
    task = repair("fixes")
    right = "<<<<<<< SEARCH\n    let n = len_of();\n=======\n    let n = len_of(s);\n>>>>>>> REPLACE"
    wrong = right.replace("len_of(s)", "len_of(0)")
    compile_reward = dict(zip(["compile", "tests", "format", "layered"], CompilerRewards(
        Judge({"rust": rust_oracle}), {task.id: task}, edits=True).functions()))["compile"]
    assert compile_reward(None, [right, wrong, FIXED], [task.id] * 3) == [1.0, 0.0, 0.0]
    as_declarations = CompilerRewards(Judge({"rust": rust_oracle}), {task.id: task}).functions()
    assert as_declarations[0](None, [right, f"```rust\n{FIXED}\n```"], [task.id] * 2) == [0.0, 1.0]
