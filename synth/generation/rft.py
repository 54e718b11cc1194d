"""Rejection sampling (STaR / RFT / ReST-EM): k samples per task, from the policy itself (a local
model, in-process, batched across prompts) or from a model behind an API; each judged exactly as
`synth eval` judges an answer (synth/tasks/judge/: it compiles where the task places it, defines what
was asked, keeps a repair's signature, is not hollow, passes the task's tests), and, given a
CargoOracle, the crate's own tests. Passing samples are kept (distinct after normalizing, capped
per task); failing ones are paired with them for preference training, with their verdicts. With
`self_repair` tries, a failing attempt goes back to the same sampler with rustc's errors (the
prompt of compile-feedback turns, synth/tasks/feedback.py), and a try that passes is its fix: a
verified repair of a mistake the model made itself. The graph is sample -> verify -> self_repair
-> select; the logic is in the plain functions."""
from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from langgraph.graph import END, START, StateGraph

from synth.generation.settings import RftSettings

from synth.prompting.chat import serve_prompt
from synth.tasks.completion import answer_code, code_is_final
from synth.tasks.feedback import feedback_task, worth_a_turn
from synth.tasks.passk import pass_at_k
from synth.tasks.task import Task


if TYPE_CHECKING:  # what the judge says is only read here
    from synth.tasks.judge import Judge, Outcome


class ApiSampler:
    """k samples per prompt through the spend-gated client: one request with `n` where the server
    takes it, else k requests with seeds seed, seed+1, ... (each its own cache entry)."""

    def __init__(self, client, spec, seed: int = 0, workers: int = 2):
        self.client, self.spec, self.seed, self.workers = client, spec, seed, workers
        self.name = spec.model

    def sample(self, prompt: str, k: int) -> list[str]:
        request = self.spec.request(prompt, None)
        if self.spec.multi_sample:
            return self.client.complete(dataclasses.replace(request, n=k)).texts
        return [self.client.complete(dataclasses.replace(request, seed=self.seed + i)).texts[0] for i in range(k)]

    def complete(self, prompts: list[str], k: int) -> list[list[str]]:
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            return list(pool.map(lambda p: self.sample(p, k), prompts))


class PolicySampler:
    """The policy in this process (synth/llm/local.py): user prompts through the serving template,
    k samples each, prompts batched; a sample stops once its first fenced block closes."""

    def __init__(self, spec, seed: int = 0, batch: int | None = None):
        from synth.llm.local import BATCH_ROWS, LocalSampler
        self.sampler = LocalSampler(spec.model, adapter=spec.adapter, max_new_tokens=spec.max_tokens,
                                    temperature=spec.temperature if spec.temperature is not None else 0.8,
                                    seed=seed, dtype=spec.dtype)
        self.batch = batch or BATCH_ROWS  # rows: prompts x k
        self.name = self.sampler.name

    def complete(self, prompts: list[str], k: int) -> list[list[str]]:
        return self.sampler.complete([serve_prompt(p) for p in prompts], k=k, greedy=False,
                                     batch_size=max(1, self.batch // k), until=code_is_final)


@dataclass
class Repair:
    """One failing attempt sent back with rustc's errors: its tries, what the judge said of each,
    and the fix (the first try that passes; else the verified reference, where asked for)."""
    attempt: int  # the sample's index
    task: Task  # the feedback task: the attempt and its errors as the prompt
    tries: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    fixed: int | None = None  # the try that passed
    reference: Outcome | None = None  # the reference judged as the fix, when no try passed

    @property
    def fix(self) -> str:
        """`model` (a try passed), `reference` (the task's verified answer) or '' (not fixed)."""
        return "model" if self.fixed is not None else "reference" if self.reference and self.reference.passed else ""


@dataclass
class Sampled:
    """One task's samples, what the judge said of each, and what was kept."""
    task: Task
    completions: list[str]
    outcomes: list[Outcome]
    kept: list[int] = field(default_factory=list)  # indices of the passing samples kept
    repairs: list[Repair] = field(default_factory=list)  # failing attempts sent back (self_repair)

    @property
    def passed(self) -> list[bool]:
        return [o.passed for o in self.outcomes]

    def figures(self, k: int) -> dict:
        n, c = len(self.outcomes), sum(self.passed)
        return {"task": self.task.id, "family": self.task.family, "samples": n, "passed": c, "kept": len(self.kept),
                "pass@1": round(pass_at_k(n, c, 1), 4) if n else 0.0,
                f"pass@{k}": round(pass_at_k(n, c, min(k, n)), 4) if n else 0.0,
                "sent_back": len(self.repairs), "fixed_by_model": sum(r.fix == "model" for r in self.repairs),
                "fixed_by_reference": sum(r.fix == "reference" for r in self.repairs)}


@dataclass
class RftResult:
    sampled: list[Sampled] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)

    def figures(self, k: int) -> list[dict]:
        return [s.figures(k) for s in self.sampled]

    def message(self) -> str:
        samples = sum(len(s.outcomes) for s in self.sampled)
        passed = sum(sum(s.passed) for s in self.sampled)
        kept = sum(len(s.kept) for s in self.sampled)
        return f"rft: {kept} samples kept from {len(self.sampled)} tasks; {passed}/{samples} samples passed"


def normalize(code: str) -> str:
    """For deduplication: comments dropped, whitespace collapsed."""
    code = re.sub(r"//[^\n]*", "", code)
    return " ".join(code.split())


def select(completions: list[str], passed: list[bool], cap: int) -> list[int]:
    """The passing samples to keep: distinct after normalizing, at most `cap`, in sample order."""
    kept, seen = [], set()
    for i, (reply, ok) in enumerate(zip(completions, passed)):
        norm = normalize(answer_code(reply))
        if ok and norm and norm not in seen and len(kept) < cap:
            seen.add(norm)
            kept.append(i)
    return kept


def attempts(sampled: Sampled, cap: int) -> list[int]:
    """The failing samples worth sending back: code that defines what was asked (an attempt at
    this declaration, not prose) and that the compiler rejected; distinct after normalizing, at
    most `cap`, in sample order."""
    chosen, seen = [], set()
    for i, (reply, outcome) in enumerate(zip(sampled.completions, sampled.outcomes)):
        code = answer_code(reply)
        norm = normalize(code)
        if (not outcome.solved and worth_a_turn(sampled.task, code, outcome.verdict)
                and norm not in seen and len(chosen) < cap):
            seen.add(norm)
            chosen.append(i)
    return chosen


def self_repair(sampled: list[Sampled], sampler, judge: Judge, config: RftSettings, stats: Counter) -> None:
    """Every task's failing attempts back to the sampler with rustc's errors, `config.self_repair`
    tries each (one batched sampling, one judgement); where none passes and `reference_fixes` is
    set, the task's verified reference is judged as the fix."""
    sent = [(s, i) for s in sampled for i in attempts(s, config.self_repair_per_task)] if config.self_repair else []
    if not sent:
        return
    repairs = [Repair(i, feedback_task(s.task, answer_code(s.completions[i]), s.outcomes[i].verdict)) for s, i in sent]
    stats["self_repair_calls"] += 1
    for repair, tries in zip(repairs, sampler.complete([r.task.prompt for r in repairs], config.self_repair)):
        repair.tries = list(tries)
    flat = [(r, t) for r in repairs for t in r.tries]
    outcomes = judge.judge([r.task for r, _ in flat], [t for _, t in flat]) if flat else []
    stats["self_repair_verified"] += len(outcomes)
    start = 0
    for repair in repairs:
        repair.outcomes = outcomes[start:start + len(repair.tries)]
        start += len(repair.tries)
        repair.fixed = next((i for i, o in enumerate(repair.outcomes) if o.passed), None)
    unfixed = [r for r in repairs if r.fixed is None and r.task.reference] if config.reference_fixes else []
    if unfixed:
        for repair, judged in zip(unfixed, judge.judge([r.task for r in unfixed], [r.task.reference for r in unfixed])):
            repair.reference = judged
    for (owner, _), repair in zip(sent, repairs):
        owner.repairs.append(repair)


def similarity(broken: str, fixed: str) -> float:
    """How near a fix stays to the attempt it repairs (difflib's ratio of their lines)."""
    return round(difflib.SequenceMatcher(None, broken.splitlines(), fixed.splitlines()).ratio(), 4)


class State(TypedDict, total=False):
    tasks: list[Task]
    completions: list[list[str]]
    sampled: list[Sampled]


def build_graph(sampler, judge: Judge, config: RftSettings, stats: Counter):
    """sample (every task's k samples, batched) -> verify (one judgement of them all) ->
    self_repair (failing attempts back with rustc's errors, when `config.self_repair`) -> select."""
    def sample(state: State) -> State:
        stats["sample_calls"] += 1
        return {"completions": sampler.complete([t.prompt for t in state["tasks"]], config.k)}

    def verify(state: State) -> State:
        tasks, completions = state["tasks"], state["completions"]
        flat = [(t, c) for t, cs in zip(tasks, completions) for c in cs]
        outcomes = judge.judge([t for t, _ in flat], [c for _, c in flat]) if flat else []
        stats["verified"] += len(outcomes)
        sampled, start = [], 0
        for task, replies in zip(tasks, completions):
            sampled.append(Sampled(task, replies, outcomes[start:start + len(replies)]))
            start += len(replies)
        return {"sampled": sampled}

    def repair(state: State) -> State:
        self_repair(state["sampled"], sampler, judge, config, stats)
        return {"sampled": state["sampled"]}

    def choose(state: State) -> State:
        for s in state["sampled"]:
            s.kept = select(s.completions, s.passed, config.cap_per_task)
        return {"sampled": state["sampled"]}

    graph = StateGraph(State)
    graph.add_node("sample", sample)
    graph.add_node("verify", verify)
    graph.add_node("self_repair", repair)
    graph.add_node("select", choose)
    graph.add_edge(START, "sample")
    graph.add_edge("sample", "verify")
    graph.add_edge("verify", "self_repair")
    graph.add_edge("self_repair", "select")
    graph.add_edge("select", END)
    return graph.compile()


def run_rft(tasks: list[Task], sampler, judge: Judge, settings: RftSettings | None = None, on_item=None) -> RftResult:
    """Every task's samples, verdicts and kept samples (a judge with `crate_tests` also runs a
    sample that counts against its crate's tests, where its task says where it sits there)."""
    config = settings or RftSettings()
    result = RftResult()
    if not tasks:
        return result
    final = build_graph(sampler, judge, config, result.stats).invoke({"tasks": list(tasks)})
    result.sampled = final["sampled"]
    if on_item:
        for s in result.sampled:
            on_item(f"{sum(s.passed)}/{len(s.outcomes)} samples passed")
    return result


def pairs(sampled: Sampled, cap: int = 1) -> list[dict]:
    """Chosen/rejected pairs of one task: each kept sample against failing ones, with why they failed."""
    failing = [i for i, ok in enumerate(sampled.passed) if not ok]
    out = []
    for chosen in sampled.kept:
        for bad in failing[:cap]:
            outcome = sampled.outcomes[bad]
            out.append({"task": sampled.task.id, "family": sampled.task.family, "prompt": sampled.task.prompt,
                        "chosen": answer_code(sampled.completions[chosen]),
                        "rejected": answer_code(sampled.completions[bad]),
                        "rejected_verdict": {"compiled": outcome.compiled, "defined": outcome.defined,
                                             "tests": outcome.tests, "first_error": outcome.first_error}})
    return out
