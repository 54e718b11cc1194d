"""A greedy reply that gives back the broken code it was shown is asked again (`[eval] retries`):
sampled up to N times, the first reply that changes the code is the answer, at the first turn of
a repair task and at a compile-feedback turn alike, judged on real rustc; without retries the copy
stands; the copies and what the retry changed are counted per family."""
from synth.tasks.judge import Judge
from synth.tasks.task import Task
from training.evaluation.evaluate import evaluate
from synth.tasks.feedback import gives_back
from training.evaluation.model_answers import ModelAnswers
from training.run.profile import EvalSettings

CONTEXT = "fn len_of(s: &str) -> usize {\n    s.len()\n}\n"
FIXED = "pub fn size(s: &str) -> usize {\n    let n = len_of(s);\n    n\n}"
BROKEN = "pub fn size(s: &str) -> usize {\n    let n = len_of();\n    n\n}"  # E0061
WRONG = "pub fn size(s: &str) -> usize {\n    let n = len_of(0);\n    n\n}"  # E0308: a change, not a fix


def repair(name: str) -> Task:
    return Task(id=name, lang="rust", family="repair", prompt=prompt_showing(BROKEN, name),
                context=CONTEXT, before=CONTEXT, after="\n", broken=BROKEN, must_define=["fn size"], reference=FIXED,
                signature="pub fn size(s: &str) -> usize", kind="fn")


def codegen(name: str) -> Task:
    return Task(id=name, lang="rust", prompt=f"Write `size` ({name}).", context=CONTEXT, must_define=["fn size"],
                reference=FIXED)


class CopyingSampler:
    """A model stand-in that copies: greedy, every repair prompt (the first turn's, a feedback
    turn's) gets its broken code back; sampled, the first reply is a copy again and the next ones
    change the code (into `then`); a codegen prompt gets `WRONG`. It records what it was asked."""
    name = "copying"

    def __init__(self, then: str = FIXED):
        self.then, self.sampled = then, []

    def _shown(self, prompt: str) -> str | None:
        for code in (BROKEN, WRONG):
            if f"```rust\n{code}\n```" in prompt:
                return code
        return None

    def greedy(self, prompts, batch_size, until=None):
        return [f"```rust\n{self._shown(p) or WRONG}\n```" for p in prompts]

    def complete(self, prompts, k, greedy, batch_size, until=None):
        self.sampled += [(p, k) for p in prompts]
        return [[f"```rust\n{self._shown(p) if n == 0 else self.then}\n```" for n in range(k)] for p in prompts]


def prompt_showing(code: str, name: str) -> str:
    return f"The declaration:\n```rust\n{code}\n```\n\nReply with the corrected declaration only. ({name})"


def test_a_copy_is_asked_again_and_the_first_reply_that_changes_the_code_counts(rust_oracle):
    task = repair("copied")
    judge = Judge({"rust": rust_oracle})
    without = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1), CopyingSampler())
    assert evaluate(without.settings, without, judge, [task], "x")["per_task"]["copied"]["solved"] == 0.0
    assert without.gave_back == {"repair": {"replies": 1}}  # counted, not asked again
    sampler = CopyingSampler()
    model = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1, retries=3), sampler)
    result = evaluate(model.settings, model, judge, [task], "x")
    assert result["per_task"]["copied"]["solved"] == 1.0 and result["per_task"]["copied"]["exact"] == 1.0
    assert sampler.sampled == [(sampler.sampled[0][0], 3)] and model.gave_back == {"repair": {"replies": 1, "changed": 1}}
    assert [a["answer"] for a in result["answers"]] == [f"```rust\n{FIXED}\n```"]  # the retried reply is the answer kept


def test_a_retry_that_only_copies_keeps_the_copy_and_a_change_counts_only_if_it_compiles(rust_oracle):
    task = repair("stuck")
    judge = Judge({"rust": rust_oracle})
    model = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1, retries=1), CopyingSampler())
    assert model([task]) == [[f"```rust\n{BROKEN}\n```"]]  # the one sample was a copy too
    assert model.gave_back == {"repair": {"replies": 1}}
    wrong = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1, retries=2), CopyingSampler(then=WRONG))
    result = evaluate(wrong.settings, wrong, judge, [task], "x")
    assert result["per_task"]["stuck"]["solved"] == 0.0 and wrong.gave_back == {"repair": {"replies": 1, "changed": 1}}


def test_a_feedback_turn_that_copies_is_asked_again(rust_oracle):
    """Codegen: the first answer (WRONG) fails; its feedback turn shows it, the greedy reply gives
    it back, and the retry's change fixes it at turn 2."""
    sampler = CopyingSampler()
    model = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1, turns=2, retries=2), sampler)
    result = evaluate(model.settings, model, Judge({"rust": rust_oracle}), [codegen("own")], "x")
    assert result["per_task"]["own"]["solved_by_turn"] == [0.0, 1.0]
    assert model.gave_back == {"codegen": {"replies": 1, "changed": 1}}  # the feedback task keeps its family
    plain = ModelAnswers(EvalSettings(decoding="greedy", k=1, samples=1, turns=2), CopyingSampler())
    assert evaluate(plain.settings, plain, Judge({"rust": rust_oracle}), [codegen("own")], "x")[
        "per_task"]["own"]["solved_by_turn"] == [0.0, 0.0]


def test_sampled_decoding_is_left_as_it_is_and_only_shown_code_is_a_copy():
    sampler = CopyingSampler()
    task = repair("s")
    model = ModelAnswers(EvalSettings(decoding="sample", k=1, samples=2, retries=4), sampler)
    assert model([task]) == [[f"```rust\n{BROKEN}\n```", f"```rust\n{FIXED}\n```"]]  # a copy among samples stays
    assert sampler.sampled == [(sampler.sampled[0][0], 2)] and model.gave_back == {}
    assert gives_back(task, f"```rust\n{BROKEN}\n```\n") and not gives_back(task, f"```rust\n{FIXED}\n```")
    assert not gives_back(codegen("c"), "```rust\n\n```")  # a task that shows no code has nothing to give back
