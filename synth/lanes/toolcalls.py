"""The tool-call lane: an LLM writes a task and a call per MCP tool; the call is checked against
the tool's schema (and run on the live server for read-only tools) (synth/tools/). Tools come
from a saved `tools/list` file and from `[[stages.toolcalls.servers]]`, listed live each run;
each list is saved into the run with its hash. One item per tool set: a server whose list changed
is the only one verified again. Selection menus mix the sets, so they are rebuilt from the stored
calls at the end, without a call."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pydantic import Field

from synth.prompts import template, template_hash
from synth.store import fingerprint
from synth.strict import Strict
from synth.tools.servers import configured_sets, name_clashes, save_sets
from synth.tools.stage import ToolStageConfig, build_rows, hard_negative_share, verify_calls

from .base import Lane, StageSettings
from .estimate import plan_row


class McpServer(Strict):
    """[[stages.toolcalls.servers]]: listed live at the start of each run; its tools are named `NAME__tool`."""
    name: str = Field(pattern=r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$")
    command: list[str] = Field(min_length=1)  # the program and its arguments (stdio)
    env: list[str] = Field(default_factory=list)  # names of environment variables to pass through (none by default)
    timeout_s: float = Field(60, gt=0)


class ToolcallsSettings(StageSettings):
    model: str = ""
    tools: str = ""  # a JSON file of MCP tool definitions (the `tools/list` result)
    server: list[str] = Field(default_factory=list)  # command + args of the live MCP server (stdio) that runs
    # the saved file's read-only tools' calls; rows whose call fails are rejected
    servers: list[McpServer] = Field(default_factory=list)
    per_tool: int = Field(2, gt=0)
    k: int = Field(10, gt=1)

    def check(self) -> None:
        if not (self.tools or self.servers):
            raise ValueError("stages.toolcalls is enabled but names no tools file and no servers")
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError(f"stages.toolcalls.servers: two servers are named {max(names, key=names.count)!r}")

    def resolve_paths(self, resolve) -> None:
        self.tools = resolve(self.tools) or ""
        self.server = [resolve(a) if a.endswith(".py") else a for a in self.server]
        for server in self.servers:
            server.command = [resolve(a) if a.endswith(".py") else a for a in server.command]


def engine_config(settings: ToolcallsSettings, seed: int, sets: list) -> ToolStageConfig:
    return ToolStageConfig(k=settings.k, per_tool=settings.per_tool, seed=seed,
                           list_hashes={s.name: s.hash for s in sets if s.name})


class ToolcallsLane(Lane):
    name = "toolcalls"
    Settings = ToolcallsSettings

    def items(self, ctx, settings, decls):
        sets = configured_sets(settings, Path(ctx.out) / "tools")  # each server listed live now
        ctx.attention += [s.error for s in sets if s.error]
        return sets

    def key(self, tool_set):
        """A tool set's item: its exact tools/list and where its calls run."""
        return fingerprint(tool_set.name, tool_set.hash, tool_set.server.describe() if tool_set.server else None)

    def lang(self, tool_set):
        return None

    def size(self, tool_set):
        return len(tool_set.tools)

    def early_rejects(self, tool_set):
        server = [{"check": "server", "server": tool_set.name, "reason": tool_set.error}] if tool_set.error else []
        return server + [{"check": "definition", "server": tool_set.name, "reason": p} for p in tool_set.problems]

    def fingerprint(self, ctx, settings, lang, oracle):
        # Not k, nor the servers: menus are rebuilt each run without calls; each tool set is its own item.
        return fingerprint("toolcalls-calls", ctx.models[settings.model], settings.per_tool, ctx.seed,
                           template_hash("toolcall"))

    def process(self, ctx, settings, todo, oracle, out):
        config = engine_config(settings, ctx.seed, todo)
        done = {}
        for tool_set in todo:
            runner = tool_set.server
            verified = verify_calls(tool_set.tools, ctx.client, ctx.models[settings.model], replace(
                config, server=(runner.command[0], list(runner.command[1:])) if runner else None,
                env=runner.environment() if runner else None), on_item=ctx.ticker("toolcalls"))
            if not verified.rejections.get("not generated", 0):
                done[self.key(tool_set)] = {"rows": [], "calls": verified.calls, "rejected": verified.rejected,
                                            "executed": verified.executed}
        return done

    def collect(self, stored, out):
        out.rejected += stored["rejected"]
        out.extra.setdefault("calls", []).extend(stored["calls"])
        out.extra.setdefault("executed", []).extend(stored["executed"])

    def finish(self, ctx, settings, out, items):
        calls = out.extra.pop("calls", [])
        out.rows = build_rows(calls, [t for s in items for t in s.tools], engine_config(settings, ctx.seed, items))
        out.extra["executed"] = sorted(set(out.extra.get("executed", [])))
        out.extra["hard_negative_share"] = round(hard_negative_share(out.rows), 4)
        out.extra["tool_lists"] = save_sets(Path(ctx.out) / "tools", items)
        out.extra["name_clashes"] = name_clashes(items)

    def plan(self, ctx, settings, pending, estimate):
        spec = ctx.models[settings.model]
        tools = [t for tool_set in pending for t in tool_set.tools]
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
