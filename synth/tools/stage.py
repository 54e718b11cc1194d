"""Tool-call rows: an LLM writes a user task and the call for a tool; the call must parse, match
the tool's schema, (for read-only tools) run without error on the live server, and the task must
not name the tool. Accepted calls become a tool-selection row (the right tool among k offered,
hard negatives from its group first, seeded order) and an argument-generation row (task + schema
-> arguments). Every check's rejections are counted and kept with their reasons."""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

from oracles.verdict import Verdict
from synth.llm.request import BudgetExceeded, CallFailed
from synth.prompts import system_prompt, template, template_hash
from synth.rows import Provenance, Row, make_row

from .checks import check_format, check_leak, check_schema
from .definitions import ToolDef, execute_live


@dataclass
class ToolStageConfig:
    k: int = 10  # tools offered in a selection row
    per_tool: int = 2  # tasks asked per tool
    seed: int = 0
    server: tuple[str, list[str]] | None = None  # (command, args) of the live server, for execution checks


@dataclass
class ToolResult:
    rows: list[Row] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
    rejections: Counter = field(default_factory=Counter)  # by check
    executed: list[str] = field(default_factory=list)  # tool names actually called on the server

    def hard_negative_share(self) -> float:
        """Share of selection rows in which at least half the negatives share the right tool's group."""
        rows = [r for r in self.rows if r.task == "tool_selection"]
        good = sum(r.negatives_in_group * 2 >= r.negatives for r in rows)
        return good / len(rows) if rows else 0.0


def offer(tool: ToolDef, tools: list[ToolDef], k: int, rng: random.Random) -> list[ToolDef]:
    """The right tool, negatives from its group first, random fill; in a seeded order."""
    same = sorted((t for t in tools if t.group == tool.group and t.name != tool.name), key=lambda t: t.name)
    other = sorted((t for t in tools if t.group != tool.group), key=lambda t: t.name)
    rng.shuffle(same)
    rng.shuffle(other)
    negatives = (same + other)[:max(0, min(k, len(tools)) - 1)]
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
    return Verdict(candidate_id=tool.name, passed=True, oracle="mcp-tool-schema",
                   toolchain=f"jsonschema {tool.validator().__class__.__name__}; execution: {execution}")


def run_tool_stage(tools: list[ToolDef], client, spec,
                   config: ToolStageConfig | None = None, on_item=None) -> ToolResult:
    config = config or ToolStageConfig()
    result = ToolResult()
    by_name = {t.name: t for t in tools}
    candidates = []  # (tool, task, arguments) that passed format, schema and leakage
    for tool in tools:
        if on_item:
            on_item(tool.name)
        for variant in range(config.per_tool):
            prompt = template("toolcall").format(variant=variant + 1, description=tool.description,
                                                 schema=json.dumps(tool.schema, sort_keys=True))
            try:
                reply = client.complete(spec.request(prompt, "toolcall")).texts[0]
            except (BudgetExceeded, CallFailed) as exc:
                result.rejections["not generated"] += 1
                result.rejected.append({"tool": tool.name, "check": "generation", "reason": str(exc)})
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
                result.rejected.append({"tool": tool.name, "check": check, "reason": problem, "reply": reply[:500]})
                continue
            candidates.append((tool, task, arguments))
    executions = {}
    if config.server:
        safe = [(t.name, a) for t, _, a in candidates if t.safe]
        for (name, arguments), outcome in zip(safe, execute_live(*config.server, safe)):
            executions[(name, json.dumps(arguments, sort_keys=True))] = outcome
            result.executed.append(name)
    rng = random.Random(config.seed)
    for tool, task, arguments in candidates:
        key = (tool.name, json.dumps(arguments, sort_keys=True))
        if tool.safe and config.server:
            ok, text = executions[key]
            if not ok:
                result.rejections["execution"] += 1
                result.rejected.append({"tool": tool.name, "check": "execution", "reason": f"the server said: {text}"})
                continue
            execution = "ran without error on the live server"
        else:
            execution = "not run (tool not marked read-only)" if config.server else "not run (no live server)"
        result.rows += _rows(tool, task, arguments, tools, rng, config, execution)
    result.rows.sort(key=lambda r: (r.task, r.id))
    return result


def _rows(tool, task, arguments, tools, rng, config, execution) -> list[Row]:
    offered = offer(tool, tools, config.k, rng)
    call = json.dumps({"name": tool.name, "arguments": arguments}, sort_keys=True)
    menu = "\n".join(f"- {t.name}: {t.description}" for t in offered)
    provenance = Provenance(source_path="tools/list", decl_hash=tool.name, stage="toolcalls",
                            prompt_template_hash=template_hash("toolcall"), seed=config.seed)
    checks = {"format": "ok", "schema": "ok", "leakage": "ok", "execution": execution}
    negatives = [t for t in offered if t.name != tool.name]
    selection = make_row(
        lang="vox", lane="vox_tool_selection", task="tool_selection", verdict=_verdict(tool, execution),
        system=system_prompt() + "\n\nTools you can call:\n" + menu, prompt=task, response=call,
        provenance=provenance, tools_offered=[t.name for t in offered], checks=checks,
        negatives=len(negatives), negatives_in_group=sum(t.group == tool.group for t in negatives))
    arguments_row = make_row(
        lang="vox", lane="vox_argument_generation", task="argument_generation", verdict=_verdict(tool, execution),
        system=system_prompt(), response=json.dumps(arguments, sort_keys=True), provenance=provenance, checks=checks,
        prompt=f"{task}\n\nCall `{tool.name}` ({tool.description}). Its input schema:\n"
               f"{json.dumps(tool.schema, sort_keys=True)}\n\nReply with the arguments as JSON.")
    return [selection, arguments_row]
