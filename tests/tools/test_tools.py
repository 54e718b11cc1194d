"""Tool-call data: definitions from a live MCP server (examples/mcp/server.py, over stdio with the
mcp SDK) and from a saved tools/list; calls written by the LLM (scripted loopback server, real
openai SDK) and checked: format, schema, execution (read-only tools only), leakage."""
import json
import re
import sys

import jsonschema
import pytest
from conftest import ROOT
from benchmarks.fixtures.llm_server import FakeLLMServer

from synth.llm.models import ModelSettings
from synth.llm.client import LLMClient
from synth.llm.cost.ledger import Ledger
from synth.llm.response_cache import ResponseCache
from synth.tools.checks import check_leak, name_variants
from synth.tools.definitions import list_live, load_tools_file, validate_definitions
from synth.tools.calls import ToolRun, run_tool_lane
from synth.tools.settings import ToolcallsSettings

SERVER = (sys.executable, [str(ROOT / "examples" / "mcp" / "server.py")])
LANES = ("app", "workflow", "ai", "interop", "data", "platform")
VERBS = ("list", "create", "inspect", "archive", "rename", "export")
NOUNS = ("pages", "routes", "prompts", "bridges", "snapshots", "secrets")


def registry() -> list[dict]:
    """A saved tools/list with 36 tools over the six Vox product lanes."""
    tools = []
    for lane, noun in zip(LANES, NOUNS):
        for verb in VERBS:
            tools.append({"name": f"vox_{lane}_{verb}_{noun}", "description": f"{verb.title()} the {noun} of a {lane} project.",
                          "inputSchema": {"type": "object", "properties": {
                              "project": {"type": "string", "minLength": 1},
                              "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                              "required": ["project"], "additionalProperties": False},
                          "_meta": {"product_lane": lane}})
    return tools


def test_malformed_definitions_are_reported_and_skipped():
    raw = registry()[:3] + [
        {"name": "vox_bad_schema", "description": "x", "inputSchema": {"type": "object",
                                                                        "properties": {"a": {"type": "nope"}}}},
        {"description": "no name at all", "inputSchema": {"type": "object"}},
        dict(registry()[0]),
    ]
    tools, problems = validate_definitions(raw)
    assert [t.name for t in tools] == [r["name"] for r in raw[:3]]
    assert any("vox_bad_schema" in p and "not a valid JSON Schema" in p for p in problems)
    assert any("no name" in p and "invalid definition: name" in p for p in problems)
    assert any("duplicate tool name `vox_app_list_pages`" in p for p in problems)


def test_leak_check_knows_the_obvious_variants():
    tool = validate_definitions(registry()[:1])[0][0]
    assert {"vox_app_list_pages", "app list pages", "applistpages"} <= name_variants(tool.name)
    assert check_leak("Please use app_list_pages for the shop", tool)
    assert check_leak("Show me the App List Pages of my shop", tool)
    assert check_leak("Which pages does my shop project have?", tool) is None


def scripted(tools):
    by_description = {t.description: t for t in tools}

    def respond(body):
        prompt = body["messages"][-1]["content"]
        desc = re.search(r"Tool description: (.*)\n", prompt).group(1)
        variant = int(re.search(r"variant (\d+)", prompt).group(1))
        tool = by_description[desc]
        props = tool.schema.get("properties", {})
        if tool.name == "vox_query_table":
            return json.dumps({"task": "Show me rows of the Nope table.", "arguments": {"table": "Nope"}})
        if tool.name.endswith("archive_pages") and variant == 1:
            return json.dumps({"task": "Run vox_app_archive_pages on shop.", "arguments": {"project": "shop"}})
        if tool.name.endswith("rename_routes") and variant == 1:
            return json.dumps({"task": "Rename the routes of shop.", "arguments": {"project": 7}})
        if tool.name.endswith("export_prompts") and variant == 2:
            return "sure! here you go"
        args = {}
        for name, prop in props.items():
            if prop.get("type") == "integer":
                args[name] = 5
            elif prop.get("type") == "string":
                args[name] = {"status": "open", "table": "Task", "environment": "staging"}.get(name, "shop")
        return json.dumps({"task": f"I need help with this ({variant}): {desc.lower()}", "arguments": args})

    return respond


@pytest.mark.slow
def test_tool_rows_are_valid_leak_free_and_executed_only_when_safe(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    live, problems = validate_definitions(list_live(*SERVER))
    assert not problems and {t.name for t in live if t.safe} >= {"vox_list_tasks", "vox_query_table"}
    saved = tmp_path / "tools.json"
    saved.write_text(json.dumps({"tools": registry()}))
    tools = live + validate_definitions(load_tools_file(saved))[0]
    with FakeLLMServer(responder=scripted(tools)) as server:
        client = LLMClient(Ledger(tmp_path / "l.sqlite", 1.0), ResponseCache(tmp_path / "c"))
        result = run_tool_lane(tools, client, ModelSettings(provider="openai", model="gpt-4o-mini", base_url=server.base_url + "/v1"),
                                ToolcallsSettings(k=10, per_tool=2), ToolRun(seed=0, server=SERVER))
    by_name = {t.name: t for t in tools}
    rows = result.rows
    print(f"\n{len(rows)} rows; rejections by check {dict(result.rejections)}; hard negatives: "
          f"{result.hard_negative_share():.0%} of selection rows have >= half their negatives from the tool's group")
    for row in rows:  # independent re-validation
        call = json.loads(row.response)
        name, args = (call["name"], call["arguments"]) if row.task == "tool_selection" else (None, call)
        if name:
            tool = by_name[name]
            jsonschema.Draft202012Validator(tool.schema).validate(args)
            assert check_leak(row.prompt, tool) is None and name in row.tools_offered
    assert {r.task for r in rows} == {"tool_selection", "argument_generation"}
    assert result.rejections["schema"] == 1 and result.rejections["leakage"] == 1
    assert result.rejections["format"] == 1 and result.rejections["execution"] == 2  # both variants of query_table
    failed = [r for r in result.rejected if r.kind == "execution"]
    assert all("no table named Nope" in r.reason for r in failed)
    assert set(result.executed) <= {t.name for t in tools if t.safe} and "vox_deploy_app" not in result.executed
    assert "vox_list_tasks" in result.executed
    assert result.hard_negative_share() >= 0.8


@pytest.mark.parametrize("k", [3])
def test_offer_is_seeded_and_contains_the_tool(k):
    from random import Random

    from synth.tools.calls import offer
    tools = validate_definitions(registry())[0]
    a, b = offer(tools[0], tools, k, Random(1)), offer(tools[0], tools, k, Random(1))
    assert [t.name for t in a] == [t.name for t in b] and tools[0] in a and len(a) == k


def test_the_live_server_never_sees_our_secrets(tmp_path, monkeypatch):
    """The MCP server is a subprocess like any other: it starts with a minimal environment."""
    import sys

    from synth.tools.definitions import execute_live
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-secret-value")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-secret-value")
    server = tmp_path / "env_server.py"
    server.write_text("import os\nfrom mcp.server import MCPServer\nserver = MCPServer('env')\n\n\n"
                      "@server.tool()\ndef environment() -> str:\n    \"\"\"Print the environment.\"\"\"\n"
                      "    return repr(dict(os.environ))\n\n\nserver.run()\n")
    ((ok, text),) = execute_live(sys.executable, [str(server)], [("environment", {})])
    assert ok and "PATH" in text
    assert "secret-value" not in text and "OPENAI_API_KEY" not in text and "MY_SERVICE_TOKEN" not in text
