"""The tool-call lane: an LLM writes a task and a call per MCP tool; the call is checked against
the tool's schema (and run on the live server for read-only tools) (synth/tools/). Tools come
from a saved `tools/list` file and from `[[lanes.toolcalls.servers]]`, listed live each run;
each list is saved into the run with its hash. One item per tool set: a server whose list changed
is the only one verified again. Selection menus mix the sets, so they are rebuilt from the stored
calls at the end, without a call."""
from __future__ import annotations

import json
from pathlib import Path

from synth.prompting.templates import template
from synth.rows.rejection import Rejection
from synth.rows.keys import fingerprint
from synth.tools.settings import ToolcallsSettings
from synth.tools.servers import configured_sets, name_clashes, save_sets
from synth.tools.calls import ToolRun, build_rows, hard_negative_share, verify_calls

from .base import Lane
from .estimate import plan_row


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
        server = [Rejection("server", tool_set.error, {"server": tool_set.name})] if tool_set.error else []
        return server + [Rejection("definition", p, {"server": tool_set.name}) for p in tool_set.problems]

    def process(self, ctx, settings, todo, oracle, out):
        done = {}
        for tool_set in todo:
            runner = tool_set.server
            run = ToolRun(seed=ctx.seed, server=(runner.command[0], list(runner.command[1:])) if runner else None,
                          env=runner.environment() if runner else None)
            verified = verify_calls(tool_set.tools, ctx.client, ctx.models[settings.model], settings, run,
                                    on_item=ctx.ticker("toolcalls"))
            if not verified.rejections.get("not generated", 0):
                done[self.key(tool_set)] = {"rows": [], "calls": verified.calls,
                                            "rejected": [r.to_json() for r in verified.rejected],
                                            "executed": verified.executed}
        return done

    def collect(self, stored, out):
        out.rejected += [Rejection.from_json(r) for r in stored["rejected"]]
        out.extra.setdefault("calls", []).extend(stored["calls"])
        out.extra.setdefault("executed", []).extend(stored["executed"])

    def finish(self, ctx, settings, out, items):
        calls = out.extra.pop("calls", [])
        out.rows = build_rows(calls, [t for s in items for t in s.tools], settings,
                              ToolRun(seed=ctx.seed, list_hashes={s.name: s.hash for s in items if s.name}))
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
