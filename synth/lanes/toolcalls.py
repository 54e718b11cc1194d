"""The tool-call lane: an LLM writes a task and a call per MCP tool; the call is checked against
the tool's schema (and run on the live server for read-only tools) (synth/tools/stage.py). The
whole tool set is one item: selection rows offer negatives from every tool. A changed tool re-runs
the set, and only the changed tool's requests are new (the rest come from the response cache)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import Field

from synth.store import fingerprint
from synth.prompts import template, template_hash
from synth.tools.definitions import load_tools_file, validate_definitions
from synth.tools.stage import ToolStageConfig, run_tool_stage

from .base import Lane, StageSettings
from .estimate import plan_row


class ToolcallsSettings(StageSettings):
    model: str = ""
    tools: str = ""  # a JSON file of MCP tool definitions (the `tools/list` result)
    server: list[str] = Field(default_factory=list)  # command + args of the live MCP server (stdio):
    # read-only tools' calls are executed there and rows whose call fails are rejected
    per_tool: int = Field(2, gt=0)
    k: int = Field(10, gt=1)

    def check(self) -> None:
        if not self.tools:
            raise ValueError("stages.toolcalls is enabled but names no tools file")

    def resolve_paths(self, resolve) -> None:
        self.tools = resolve(self.tools) or ""
        self.server = [resolve(a) if a.endswith(".py") else a for a in self.server]


@dataclass
class ToolSet:
    raw: object  # the file's content, as loaded
    tools: list
    problems: list[str]


class ToolcallsLane(Lane):
    name = "toolcalls"
    Settings = ToolcallsSettings

    def items(self, ctx, settings, decls):
        raw = load_tools_file(settings.tools)
        tools, problems = validate_definitions(raw)
        return [ToolSet(raw, tools, problems)]

    def key(self, item):
        return fingerprint(item.raw)

    def lang(self, item):
        return None

    def size(self, item):
        return len(item.tools)

    def fingerprint(self, ctx, settings, lang, oracle):
        return fingerprint("toolcalls", ctx.models[settings.model], settings.per_tool, settings.k, ctx.seed,
                           settings.server, template_hash("toolcall"))

    def process(self, ctx, settings, todo, oracle, out):
        done = {}
        for item in todo:
            server = (settings.server[0], list(settings.server[1:])) if settings.server else None
            config = ToolStageConfig(k=settings.k, per_tool=settings.per_tool, seed=ctx.seed, server=server)
            result = run_tool_stage(item.tools, ctx.client, ctx.models[settings.model], config,
                                    on_item=ctx.ticker("toolcalls"))
            if not result.rejections.get("not generated", 0):
                done[self.key(item)] = {"rows": [r.model_dump(mode="json") for r in result.rows],
                                        "rejected": result.rejected}
        return done

    def early_rejects(self, item):
        return [{"check": "definition", "reason": p} for p in item.problems]

    def plan(self, ctx, settings, pending, estimate):
        spec = ctx.models[settings.model]
        tools = [t for item in pending for t in item.tools]
        requests = [("toolcalls", spec.request(template("toolcall").format(
            variant=v + 1, description=t.description, schema=json.dumps(t.schema, sort_keys=True)), "toolcall"))
            for t in tools for v in range(settings.per_tool)]
        exact = estimate.plan_calls(requests) if requests else \
            {"rows": [], "expected_cost_usd": 0.0, "worst_case_usd": 0.0, "cache_hits": 0, "calls": 0}
        measured = estimate.measured.get("toolcalls")
        per_request = (measured["rows"] / max(1, measured["items"] * settings.per_tool)) if measured else 2.0
        return plan_row("toolcalls", spec.model, items=len(tools), calls=exact["calls"],
                        cache_hits=exact["cache_hits"], input_tokens=sum(r["input_tokens"] for r in exact["rows"]),
                        output_tokens=sum(r["expected_output_tokens"] for r in exact["rows"]),
                        expected=exact["expected_cost_usd"], worst=exact["worst_case_usd"],
                        rows=per_request * len(requests), basis="measured" if measured else "default")
