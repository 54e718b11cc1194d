"""Rejection sampling (STaR/RFT): sample k completions per task, keep those the compiler accepts
(deduplicated, capped per task), and pair passing with failing completions for preference
training. The graph is sample -> verify -> select; the logic is in the plain functions."""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from oracles.verdict import Splice
from oracles.verdict import Candidate
from synth.completion import answer_code, defines, definition_of, is_hollow
from synth.extract.model import Declaration, language_and_fence, standalone_source
from synth.passk import pass_at_k
from synth.prompts import system_prompt, template
from synth.rows import Provenance, Row, Verification, make_row

from .instructions import row_prompt


@dataclass
class RftTask:
    id: str
    prompt: str  # what the model sees
    decl: Declaration  # where a completion is placed to be checked (its context, its impl)


class ApiSampler:
    """k samples in one request (provider `n`), through the spend-gated client."""

    def __init__(self, client, spec):
        self.client, self.spec = client, spec
        self.name = spec.model

    def sample(self, prompt: str, k: int) -> list[str]:
        return self.client.complete(dataclasses.replace(self.spec.request(prompt, "rft"), n=k)).texts


def task_from_instruction(decl: Declaration, instruction: str) -> RftTask:
    """An RFT task from an accepted back-translated instruction (the prompt carries the context)."""
    language, fence = language_and_fence(decl.lang)
    return RftTask(id=decl.id, decl=decl, prompt=template("rft").format(
        instruction=row_prompt(decl, instruction), language=language, fence=fence).strip())


@dataclass
class RftConfig:
    k: int = 8
    cap_per_task: int = 2
    seed: int = 0
    workers: int = 2
    tests: object = None  # a CrateOracle: completions that compile must also pass their crate's tests


@dataclass
class RftResult:
    rows: list[Row] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    tasks: list[dict] = field(default_factory=list)  # per task: samples, compiled, kept, pass@1, pass@k
    stats: Counter = field(default_factory=Counter)

    def message(self) -> str:
        samples = sum(t["samples"] for t in self.tasks)
        compiled = sum(t["compiled"] for t in self.tasks)
        return (f"rft: {len(self.rows)} rows kept from {len(self.tasks)} tasks; {compiled}/{samples} samples compiled; "
                f"{len(self.pairs)} chosen/rejected pairs")


def normalize(code: str) -> str:
    """For deduplication: comments dropped, whitespace collapsed."""
    code = re.sub(r"//[^\n]*", "", code)
    return " ".join(code.split())


class State(TypedDict, total=False):
    task: str
    completions: list[str]
    passed: list[bool]  # compiles (and passes the crate's tests when those are run)
    tests: list  # per completion: test outcome, or None when not run
    diagnostics: list[list[str]]


def build_graph(sampler, oracle, tasks: dict[str, RftTask], config: RftConfig, stats: Counter):
    def sample(state: State) -> State:
        task = tasks[state["task"]]
        stats["sample_calls"] += 1
        return {"completions": [answer_code(text) for text in sampler.sample(task.prompt, config.k)]}

    def verify(state: State) -> State:
        task = tasks[state["task"]]
        sources = [standalone_source(task.decl, c) for c in state["completions"]]
        verdicts = oracle.check([Candidate.of(s) for s in sources])
        stats["verified"] += len(verdicts)
        wanted = [definition_of(task.decl.kind, task.decl.name)]
        passed = [v.passed and defines(c, wanted) and not is_hollow(v) for v, c in zip(verdicts, state["completions"])]
        tests = [None] * len(passed)
        if config.tests is not None and task.decl.crate_root and task.decl.crate_path:
            for i, code in enumerate(state["completions"]):
                if passed[i]:
                    splice = Splice(task.decl.crate_root, task.decl.crate_path, task.decl.start_byte,
                                    task.decl.end_byte, code)
                    outcome = config.tests.test([splice])[0]
                    tests[i] = outcome.tests.model_dump() if outcome.tests else None
                    passed[i] = outcome.passed
                    stats["tested"] += 1
        return {"passed": passed, "tests": tests,
                "diagnostics": [[d.render() for d in v.errors][:3] for v in verdicts]}

    graph = StateGraph(State)
    graph.add_node("sample", sample)
    graph.add_node("verify", verify)
    graph.add_edge(START, "sample")
    graph.add_edge("sample", "verify")
    graph.add_edge("verify", END)
    return graph.compile()


def select(task: RftTask, completions: list[str], passed: list[bool], cap: int) -> tuple[list[str], list[str]]:
    """Passing completions (distinct after normalizing, at most `cap`) and the failing ones."""
    kept, seen, failing = [], set(), []
    for code, ok in zip(completions, passed):
        if not ok:
            failing.append(code)
            continue
        norm = normalize(code)
        if norm and norm not in seen and len(kept) < cap:
            seen.add(norm)
            kept.append(code)
    return kept, failing


def run_rft(tasks: list[RftTask], sampler, oracle, config: RftConfig | None = None, on_item=None) -> RftResult:
    config = config or RftConfig()
    result = RftResult()
    by_id = {t.id: t for t in tasks}
    graph = build_graph(sampler, oracle, by_id, config, result.stats)
    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        def one(task):
            final = graph.invoke({"task": task.id})
            if on_item:
                on_item(f"{sum(final['passed'])}/{len(final['passed'])} samples passed")
            return final
        finals = list(pool.map(one, tasks))
    for task, final in zip(tasks, finals):
        completions, passed = final["completions"], final["passed"]
        kept, failing = select(task, completions, passed, config.cap_per_task)
        n, c = len(completions), sum(passed)
        result.tasks.append({"task": task.id, "samples": n, "compiled": c, "kept": len(kept),
                             "pass@1": round(pass_at_k(n, c, 1), 4) if n else 0.0,
                             f"pass@{config.k}": round(pass_at_k(n, c, min(config.k, n)), 4) if n else 0.0})
        test_of = dict(zip(completions, final.get("tests") or [None] * len(completions)))
        for code in kept:
            source = standalone_source(task.decl, code)
            verdict = oracle.check([Candidate.of(source)])[0]
            result.rows.append(make_row(
                lang=task.decl.lang, lane=f"{task.decl.lang}_codegen", task="rft", prompt=task.prompt, response=code,
                verdict=verdict, system=system_prompt(), checked_source=source,
                provenance=Provenance(source_path=task.decl.path, decl_hash=task.decl.hash, decl_id=task.decl.id, stage="rft",
                                      model=sampler.name, seed=config.seed),
                samples=n, samples_passed=c, compile=Verification.of(verdict).model_dump(), tests=test_of.get(code)))
            for bad in failing[:1]:
                result.pairs.append({"task": task.id, "prompt": task.prompt, "chosen": code, "rejected": bad})
    return result
