"""Back-translation: compile-clean declaration -> instruction -> regenerated code -> compiler.

    write -> check --problems, attempts left--> write (with the problems as feedback)
                   --problems, none left------> reject
                   --ok-----------------------> regenerate -> verify --passes--> accept (rating 5)
                                                                     --fails---> judge --faithful--> accept (rating 4)
                                                                                       --else, attempts left--> write
                                                                                       --else-----------------> reject
The row's answer is always the original, compile-verified declaration; the prompt is the
instruction plus the context it needs. Nodes only wire the plain functions below.
"""
from __future__ import annotations

import hashlib

import sqlite3
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from synth.generation.settings import BacktranslateSettings
from oracles.verdict import Candidate, Verdict
from synth.tasks.completion import answer_code, defines, definition_of, is_hollow
from synth.extract.package import package_of
from synth.extract.model import Declaration, crate_name, standalone_source
from synth.llm.request import BudgetExceeded, CallFailed
from synth.prompting.templates import language_and_fence, system_prompt, template, template_hash
from synth.rows.rejection import Rejection
from synth.rows.row import Provenance, Row, make_row

from .instructions import instruction_problems, row_prompt


def named_models(settings: BacktranslateSettings, models: dict) -> tuple:
    """(writer, regenerator, judge) as [models] defines them; None where the writer stands in."""
    return (models[settings.model], models[settings.regenerator] if settings.regenerator else None,
            models[settings.judge] if settings.judge else None)


class State(TypedDict, total=False):
    decl: dict
    attempt: int
    instruction: str
    problems: list[str]
    feedback: str
    regenerated: str
    regen_passed: bool
    regen_diagnostics: list[str]
    faithful: bool
    rating: int
    outcome: str  # accepted | rejected | undone
    kind: str  # why rejected, in short (synth/rows/rejection.py)
    reason: str


def _fence(decl: Declaration) -> tuple[str, str]:
    return language_and_fence(decl.lang)


def instruction_prompt(decl: Declaration, feedback: str) -> str:
    language, fence = _fence(decl)
    owner = f" (a method of `{decl.self_type}`)" if decl.kind == "method" and decl.self_type else ""
    return template("backtranslate_instruction").format(
        language=language, fence=fence, context=decl.context.strip() or "(none)", code=decl.clean_text.strip(),
        name=decl.name, owner=owner, feedback=f"\nYour previous attempt had problems: {feedback}" if feedback else "")


def regenerate_prompt(decl: Declaration, instruction: str) -> str:
    language, fence = _fence(decl)
    return template("backtranslate_regenerate").format(language=language, fence=fence,
                                                       context=decl.context.strip() or "(none)",
                                                       instruction=instruction.strip())


def judge_prompt(decl: Declaration, instruction: str) -> str:
    return template("backtranslate_judge").format(instruction=instruction.strip(), fence=_fence(decl)[1],
                                                  code=decl.clean_text.strip())


@dataclass
class BacktranslateResult:
    rows: list[Row] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)  # per node: calls, passes, retries


def build_graph(client, oracle, settings: BacktranslateSettings, models: tuple, stats: Counter, checkpointer=None):
    writer, regenerator, judge = models
    regen_spec, judge_spec = regenerator or writer, judge or writer

    def ask(spec, prompt: str, template_name: str) -> str:
        return client.complete(spec.request(prompt, template_name)).texts[0]

    def write(state: State) -> State:
        decl = Declaration.model_validate(state["decl"])
        stats["write"] += 1
        text = ask(writer, instruction_prompt(decl, state.get("feedback", "")), "backtranslate_instruction")
        return {"instruction": text.strip(), "attempt": state.get("attempt", 0) + 1}

    def check(state: State) -> State:
        problems = instruction_problems(state["instruction"], Declaration.model_validate(state["decl"]))
        stats["check"] += 1
        stats["check_passed"] += not problems
        return {"problems": problems, "feedback": "; ".join(problems)}

    def regenerate(state: State) -> State:
        decl = Declaration.model_validate(state["decl"])
        stats["regenerate"] += 1
        reply = ask(regen_spec, regenerate_prompt(decl, state["instruction"]), "backtranslate_regenerate")
        return {"regenerated": answer_code(reply)}

    def verify(state: State) -> State:
        decl = Declaration.model_validate(state["decl"])
        verdict: Verdict = oracle.check([Candidate.of(standalone_source(decl, state["regenerated"]))])[0]
        passed = verdict.passed and defines(state["regenerated"], [definition_of(decl.kind, decl.name)]) \
            and not is_hollow(verdict)
        stats["verify"] += 1
        stats["verify_passed"] += passed
        diagnostics = [d.render() for d in verdict.errors][:5] or ([] if passed else [f"does not define `{decl.name}`"])
        return {"regen_passed": passed, "regen_diagnostics": diagnostics}

    def judge(state: State) -> State:
        decl = Declaration.model_validate(state["decl"])
        stats["judge"] += 1
        reply = ask(judge_spec, judge_prompt(decl, state["instruction"]), "backtranslate_judge")
        faithful = reply.strip().upper().startswith("YES")
        stats["judge_faithful"] += faithful
        feedback = "code written from your task did not compile: " + " | ".join(state.get("regen_diagnostics", []))
        return {"faithful": faithful, "feedback": feedback[:1500]}

    def accept(state: State) -> State:
        return {"outcome": "accepted", "rating": 5 if state.get("regen_passed") else 4}

    def reject(state: State) -> State:
        if state.get("problems"):
            kind, reason = "instruction rejected", "instruction rejected: " + "; ".join(state["problems"])
        else:
            kind = "regenerated code fails, unfaithful"
            reason = "code regenerated from the instruction does not compile, and the judge finds it unfaithful"
        return {"outcome": "rejected", "kind": kind, "reason": reason}

    def after_check(state: State) -> str:
        if not state["problems"]:
            return "regenerate"
        return "write" if state["attempt"] < settings.max_attempts else "reject"

    def after_judge(state: State) -> str:
        if state["faithful"]:
            return "accept"
        return "write" if state["attempt"] < settings.max_attempts else "reject"

    graph = StateGraph(State)
    for name, fn in (("write", write), ("check", check), ("regenerate", regenerate), ("verify", verify),
                     ("judge", judge), ("accept", accept), ("reject", reject)):
        graph.add_node(name, fn)
    graph.add_edge(START, "write")
    graph.add_edge("write", "check")
    graph.add_conditional_edges("check", after_check, ["regenerate", "write", "reject"])
    graph.add_edge("regenerate", "verify")
    graph.add_conditional_edges("verify", lambda s: "accept" if s["regen_passed"] else "judge", ["accept", "judge"])
    graph.add_conditional_edges("judge", after_judge, ["accept", "write", "reject"])
    graph.add_edge("accept", END)
    graph.add_edge("reject", END)
    return graph.compile(checkpointer=checkpointer)


def run_backtranslation(decls: list[Declaration], client, oracle, settings: BacktranslateSettings, models: dict,
                        seed: int = 0, checkpoint_path: str | None = None, on_item=None) -> BacktranslateResult:
    """Rows for the declarations whose original compiles standalone (`models`: [models], which
    the settings name). With `checkpoint_path`, a killed run resumes each item where it was
    (answers already paid for come from the cache).
    `on_item(outcome)` is called as each item finishes (progress display)."""
    result = BacktranslateResult()
    originals = oracle.check([Candidate.of(standalone_source(d)) for d in decls])
    ready = []
    for decl, verdict in zip(decls, originals):
        if verdict.passed:
            ready.append((decl, verdict))
        else:
            result.rejected.append(Rejection("original does not compile", "original does not compile standalone",
                                             {"decl": decl.id, "name": decl.name}))
    saver = None
    if checkpoint_path:
        saver = SqliteSaver(sqlite3.connect(checkpoint_path, check_same_thread=False))
    named = named_models(settings, models)
    graph = build_graph(client, oracle, settings, named, result.stats, saver)

    same = hashlib.sha256(repr((*named, settings.max_attempts, seed,
                                getattr(oracle, "toolchain", ""))).encode()).hexdigest()[:12]

    def one(item):
        decl, verdict = item
        thread_id = f"backtranslate:{same}:{decl.id}"  # other settings: another thread
        thread = {"configurable": {"thread_id": thread_id}}
        try:
            snapshot = graph.get_state(thread) if saver else None
            if snapshot is not None and snapshot.values.get("outcome"):
                final = snapshot.values  # finished before a restart
            else:
                # Unfinished (killed mid-item): start the item over. Its answered calls come from
                # the response cache, so nothing is paid twice, and the result is exactly that of
                # an uninterrupted run (replaying from a checkpoint taken mid-node is not).
                if snapshot is not None and snapshot.next:
                    saver.delete_thread(thread_id)
                final = graph.invoke({"decl": decl.model_dump()}, thread)
        except (BudgetExceeded, CallFailed) as exc:
            final = {"outcome": "undone", "reason": f"{type(exc).__name__}: {exc}"}
        if on_item:
            on_item(final["outcome"])
        return decl, verdict, final

    with ThreadPoolExecutor(max_workers=max(1, settings.workers)) as pool:
        outcomes = list(pool.map(one, ready))
    for decl, verdict, final in outcomes:
        if final["outcome"] == "accepted":
            result.rows.append(_row(decl, verdict, final, named[0].model, seed))
        elif final["outcome"] == "rejected":
            # a checkpoint finished before rejections had kinds has none
            result.rejected.append(Rejection(final.get("kind", "rejected"), final["reason"], {
                "decl": decl.id, "name": decl.name, "instruction": final.get("instruction")}))
        else:
            result.undone.append(decl.id)
            result.rejected.append(Rejection("undone", final["reason"], {"decl": decl.id, "name": decl.name}))
    result.rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash, r.provenance.decl_id or ""))
    return result


def _row(decl: Declaration, verdict: Verdict, final: State, model: str, seed: int) -> Row:
    return make_row(
        lang=decl.lang, lane=f"{decl.lang}_codegen", task="codegen", prompt=row_prompt(decl, final["instruction"]),
        response=decl.clean_text, verdict=verdict, system=system_prompt(),
        provenance=Provenance(**package_of(decl).fields(), source_path=decl.path, decl_hash=decl.hash, decl_id=decl.id, stage="backtranslate",
                              model=model, prompt_template_hash=template_hash("backtranslate_instruction"),
                              seed=seed),
        checked_source=standalone_source(decl), rating=final["rating"], instruction=final["instruction"],
        regenerated=final.get("regenerated"), regenerated_passed=bool(final.get("regen_passed")),
        attempts=final.get("attempt", 1), context=decl.context, must_define=[decl.name], crate=crate_name(decl),
    )
