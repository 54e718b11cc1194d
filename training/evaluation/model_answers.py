"""How a local model answers tasks in `synth eval`: its prompts (worked examples before them, an
edit asked for where the profile says so), greedy or sampled, and a greedy reply that gives back
the broken code it was shown asked again.

Why the retry: a model trained on repair rows copies the code it is shown, changing a line, and
where it finds no line to change it copies it whole. In the loop at af60ef4 the SFT model gave
back the broken code on 33 of 196 held-out repair tasks, and on 89 of 120 of its own second turns
(46 of 59 on codegen): asked greedily again, it gives the same copy, and the turn is lost. A user
whose model hands back what it was given asks again; so does the evaluation with `[eval] retries`,
taking the first of that many samples that changes the code (not the first the compiler accepts:
that is rejection sampling, `pick = "compiled"`). Measured on that model (4 retries): repair
38.8% against 37.2% at the first turn, +1.0 points at the second (+0.5 without); codegen 0
either way; the evaluation twice as long. Off by default."""
from __future__ import annotations

from collections import Counter

from oracles.errors import InputError
from synth.prompting.chat import serve_prompt
from synth.tasks.completion import code_is_final
from synth.tasks.edits import answer_for, asks_for_declaration, prompt_for, render_edit
from synth.tasks.feedback import gives_back
from synth.tasks.task import FAMILIES, Task, load_tasks
from training.run.profile import EvalSettings


def worked_examples(settings: EvalSettings, edits: bool = False) -> dict[str, list[tuple[str, str]]]:
    """Per family, the `shots` shortest tasks of `examples` that have a reference answer (with
    `edits`, a repair task's answer is its SEARCH/REPLACE edit)."""
    if not settings.shots:
        return {}
    if not settings.examples:
        raise InputError("eval.shots needs eval.examples (a tasks file with reference answers, e.g. tasks/rl.jsonl)")
    pool = [t for t in load_tasks(settings.examples) if t.reference]
    shots = {}
    for family in FAMILIES:
        mine = sorted((t for t in pool if t.family == family), key=lambda t: (len(t.prompt) + len(t.reference), t.id))
        shots[family] = [(prompt_for(t, edits), render_edit(t.broken, t.reference) if edits and asks_for_declaration(t)
                          else t.reference) for t in mine[:settings.shots]]
    return shots


class ModelAnswers:
    """`answer(tasks, k)`: the completions of a local model (synth/llm/local.py) per task, as the
    settings say. With `edits`, a task that shows a broken declaration asks for SEARCH/REPLACE
    blocks, and the answer judged is the declaration they make (synth/tasks/edits.py). `gave_back`
    counts, per family, the greedy replies that gave back the code shown and how many of those a
    retry changed."""

    def __init__(self, settings: EvalSettings, sampler, edits: bool = False):
        self.settings, self.sampler, self.edits = settings, sampler, edits
        self.shots = worked_examples(settings, edits)
        self.gave_back: dict[str, Counter] = {}

    def __call__(self, tasks: list[Task], k: int | None = None) -> list[list[str]]:
        """`k` completions a task (default: `samples`, one when greedy); a feedback turn asks one."""
        settings = self.settings
        prompts = [serve_prompt(prompt_for(t, self.edits), self.shots.get(t.family, ())) for t in tasks]
        if settings.decoding == "greedy":
            replies = self.sampler.greedy(prompts, settings.batch_size, until=code_is_final)
            return self._retry(tasks, prompts, [[answer_for(t, r, self.edits)] for t, r in zip(tasks, replies)])
        replies = self.sampler.complete(prompts, k=k or settings.samples, greedy=False,
                                        batch_size=settings.batch_size, until=code_is_final)
        return [[answer_for(t, c, self.edits) for c in cs] for t, cs in zip(tasks, replies)]

    def _retry(self, tasks: list[Task], prompts: list[str], answers: list[list[str]]) -> list[list[str]]:
        """The greedy answers that give back the code shown, each replaced by the first of
        `retries` sampled replies that changes it (kept where none does)."""
        copies = [n for n, (task, got) in enumerate(zip(tasks, answers)) if gives_back(task, got[0])]
        for n in copies:
            self.gave_back.setdefault(tasks[n].family, Counter())["replies"] += 1
        if not copies or not self.settings.retries:
            return answers
        tries = self.sampler.complete([prompts[n] for n in copies], k=self.settings.retries, greedy=False,
                                      batch_size=self.settings.batch_size, until=code_is_final)
        for n, options in zip(copies, tries):
            task = tasks[n]
            changed = next((a for a in (answer_for(task, o, self.edits) for o in options) if not gives_back(task, a)),
                           None)
            if changed is not None:
                answers[n] = [changed]
                self.gave_back[task.family]["changed"] += 1
        return answers
