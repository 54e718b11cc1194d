"""Tool-call rows: an LLM writes a user task and the call for a tool; the call must parse, match
the tool's schema, (for read-only tools) run without error on the live server, and the task must
not name the tool. Verification is per tool set (`verify_calls`): what it keeps is stored per set,
so a set whose list changed is the only one verified again. Accepted calls then become a
tool-selection row (the right tool among k offered, hard negatives from its group first, then its
server, seeded order) and an argument-generation row (task + schema -> arguments): `build_rows`,
cheap and without calls, over the tools of every set. Every check's rejections are counted and
kept with their reasons."""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oracles.verdict import Verdict
from synth.llm.request import BudgetExceeded, CallFailed
from synth.prompting.templates import system_prompt, template, template_hash
from synth.rows.rejection import Rejection
from synth.rows.row import Provenance, Row, make_row

from .checks import check_format, check_leak, check_schema
from .definitions import ServerFailed, ToolDef, execute_live

if TYPE_CHECKING:  # the lane's settings, given by the lane
    from synth.tools.settings import ToolcallsSettings


@dataclass
class ToolRun:
    """What one run gives the engine besides the settings: where calls run, the lists' hashes."""
    seed: int = 0
    server: tuple[str, list[str]] | None = None  # (command, args) of the live server, for execution checks
    env: dict | None = None  # extra environment for the server (names the user chose to pass through)
    list_hashes: dict = field(default_factory=dict)  # server -> sha256 of its tools/list, stamped on rows


@dataclass
class Verified:
    """What one tool set's verification kept (JSON-able: it is stored per set)."""
    calls: list[dict] = field(default_factory=list)  # {"tool": qualified name, "task", "arguments", "execution"}
    rejected: list[Rejection] = field(default_factory=list)  # kind: the check that refused it
    rejections: Counter = field(default_factory=Counter)  # by check
    executed: list[str] = field(default_factory=list)  # tool names actually called on the server


@dataclass
class ToolResult(Verified):
    rows: list[Row] = field(default_factory=list)

    def hard_negative_share(self) -> float:
        return hard_negative_share(self.rows)


def hard_negative_share(rows: list[Row]) -> float:
    """Share of selection rows in which at least half the negatives share the right tool's group."""
    rows = [r for r in rows if r.task == "tool_selection"]
    good = sum(r.negatives_in_group * 2 >= r.negatives for r in rows)
    return good / len(rows) if rows else 0.0


def offer(tool: ToolDef, tools: list[ToolDef], k: int, rng: random.Random) -> list[ToolDef]:
    """The right tool; negatives from its group first, then its server, then the rest; seeded order."""
    def tier(t: ToolDef) -> int:
        return 0 if t.group == tool.group else 1 if t.server == tool.server else 2
    tiers: list[list[ToolDef]] = [[], [], []]
    for t in sorted(tools, key=lambda t: t.qualified):
        if t.qualified != tool.qualified:
            tiers[tier(t)].append(t)
    for candidates in tiers:
        rng.shuffle(candidates)
    negatives = (tiers[0] + tiers[1] + tiers[2])[:max(0, min(k, len(tools)) - 1)]
    offered = [tool, *negatives]
    rng.shuffle(offered)
    return offered


def _parse(reply: str) -> tuple[str, dict] | None:
    start, end = reply.find("{"), reply.rfind("}")
    try:
        data = json.loads(reply[start:end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("task"), str):
        return None
    return data["task"].strip(), data.get("arguments")


def _verdict(tool: ToolDef, execution: str) -> Verdict:
    return Verdict(candidate_id=tool.qualified, passed=True, oracle="mcp-tool-schema",
                   toolchain=f"jsonschema {tool.validator().__class__.__name__}; execution: {execution}")


def verify_calls(tools: list[ToolDef], client, spec, settings: ToolcallsSettings, run: ToolRun,
                 on_item=None) -> Verified:
    """Ask for calls of each tool and check them; read-only tools' calls run on `run.server`."""
    result = Verified()
    by_name = {t.name: t for t in tools}
    candidates = []  # (tool, task, arguments) that passed format, schema and leakage
    for tool in tools:
        if on_item:
            on_item(tool.qualified)
        for variant in range(settings.per_tool):
            prompt = template("toolcall").format(variant=variant + 1, description=tool.description,
                                                 schema=json.dumps(tool.schema, sort_keys=True))
            try:
                reply = client.complete(spec.request(prompt, "toolcall")).texts[0]
            except (BudgetExceeded, CallFailed) as exc:
                result.rejections["not generated"] += 1
                result.rejected.append(Rejection("generation", str(exc), {"tool": tool.qualified}))
                continue
            parsed = _parse(reply)
            problem, check = None, "format"
            if parsed is None:
                problem = "the reply is not the JSON asked for"
            else:
                task, arguments = parsed
                problem = check_format(tool.name, arguments, by_name)
                if problem is None:
                    check, problem = "schema", check_schema(arguments, tool)
                if problem is None:
                    check, problem = "leakage", check_leak(task, tool)
            if problem:
                result.rejections[check] += 1
                result.rejected.append(Rejection(check, problem, {"tool": tool.qualified, "reply": reply[:500]}))
                continue
            candidates.append((tool, task, arguments))
    executions = _execute(candidates, run, result)
    for tool, task, arguments in candidates:
        if tool.safe and run.server:
            ok, text = executions.get((tool.name, json.dumps(arguments, sort_keys=True)), (False, "not run"))
            if not ok:
                result.rejections["execution"] += 1
                result.rejected.append(Rejection("execution", f"the server said: {text}", {"tool": tool.qualified}))
                continue
            execution = "ran without error on the live server"
        else:
            execution = "not run (tool not marked read-only)" if run.server else "not run (no live server)"
        result.calls.append({"tool": tool.qualified, "task": task, "arguments": arguments, "execution": execution})
    return result


def _execute(candidates, run: ToolRun, result: Verified) -> dict:
    """Only read-only tools' calls are ever sent to the server."""
    safe = [(t.name, a) for t, _, a in candidates if t.safe]
    if not (run.server and safe):
        return {}
    try:
        outcomes = execute_live(*run.server, safe, env=run.env)
    except ServerFailed as exc:  # every safe call is then unverified: rejected with the reason
        return {(name, json.dumps(a, sort_keys=True)): (False, f"(the session failed) {exc}") for name, a in safe}
    result.executed += [name for name, _ in safe]
    return {(name, json.dumps(a, sort_keys=True)): outcome for (name, a), outcome in zip(safe, outcomes)}


def build_rows(calls: list[dict], tools: list[ToolDef], settings: ToolcallsSettings, run: ToolRun) -> list[Row]:
    """Two rows per verified call; each selection row's menu is seeded by the call itself, so
    one set's change does not reshuffle the others' rows."""
    by_qualified = {t.qualified: t for t in tools}
    rows = []
    for call in calls:
        tool = by_qualified.get(call["tool"])
        if tool is None:  # its set is gone from this run
            continue
        rng = random.Random(f"{run.seed}:{call['tool']}:{call['task']}")
        rows += _rows(tool, call["task"], call["arguments"], tools, rng, settings.k, run, call["execution"])
    return sorted(rows, key=lambda r: (r.task, r.id))


def run_tool_lane(tools: list[ToolDef], client, spec, settings: ToolcallsSettings,
                   run: ToolRun | None = None, on_item=None) -> ToolResult:
    """One tool set, verified and made into rows."""
    run = run or ToolRun()
    verified = verify_calls(tools, client, spec, settings, run, on_item)
    return ToolResult(**verified.__dict__, rows=build_rows(verified.calls, tools, settings, run))


def tool_lang(tool: ToolDef) -> str:
    """A row's language is its tool's: Vox's registry (a saved `tools/list`) is Vox; a live MCP
    server's tools (git, time, ...) are called in plain JSON, whatever the project's language."""
    return "json" if tool.server else "vox"


def _rows(tool, task, arguments, tools, rng, k: int, run: ToolRun, execution) -> list[Row]:
    offered = offer(tool, tools, k, rng)
    call = json.dumps({"name": tool.qualified, "arguments": arguments}, sort_keys=True)
    menu = "\n".join(f"- {t.qualified}: {t.description}" for t in offered)
    provenance = Provenance(source_path=f"mcp:{tool.server}/tools/list" if tool.server else "tools/list",
                            decl_hash=tool.qualified, stage="toolcalls",
                            prompt_template_hash=template_hash("toolcall"), seed=run.seed)
    checks = {"format": "ok", "schema": "ok", "leakage": "ok", "execution": execution}
    negatives = [t for t in offered if t.qualified != tool.qualified]
    traced = {"tool_list": {"server": tool.server, "sha256": run.list_hashes[tool.server]}} \
        if tool.server in run.list_hashes else {}
    selection = make_row(
        lang=tool_lang(tool), lane="tool_selection", task="tool_selection", verdict=_verdict(tool, execution),
        system=system_prompt() + "\n\nTools you can call:\n" + menu, prompt=task, response=call,
        provenance=provenance, tools_offered=[t.qualified for t in offered], checks=checks,
        negatives=len(negatives), negatives_in_group=sum(t.group == tool.group for t in negatives), **traced)
    arguments_row = make_row(
        lang=tool_lang(tool), lane="argument_generation", task="argument_generation", verdict=_verdict(tool, execution),
        system=system_prompt(), response=json.dumps(arguments, sort_keys=True), provenance=provenance, checks=checks,
        prompt=f"{task}\n\nCall `{tool.qualified}` ({tool.description}). Its input schema:\n"
               f"{json.dumps(tool.schema, sort_keys=True)}\n\nReply with the arguments as JSON.", **traced)
    return [selection, arguments_row]
