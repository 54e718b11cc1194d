"""Tool definitions from a saved `tools/list` result or a live MCP server (stdio), validated:
the `mcp.types.Tool` model, and `inputSchema` as a valid JSON Schema of its declared draft
(2020-12 unless it says draft-07). A bad definition is reported by name and skipped."""
from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Tool
from pydantic import ValidationError

DRAFT7 = "http://json-schema.org/draft-07/schema"


@dataclass
class ToolDef:
    name: str
    description: str
    schema: dict
    group: str  # product_lane, else the name's first two segments (vox_task_*)
    safe: bool  # read-only: may be executed against the live server
    raw: dict = field(repr=False, default_factory=dict)

    def validator(self):
        cls = jsonschema.Draft7Validator if str(self.schema.get("$schema", "")).startswith(DRAFT7) \
            else jsonschema.Draft202012Validator
        return cls(self.schema)


def _group(name: str, meta: dict | None) -> str:
    if meta and meta.get("product_lane"):
        return str(meta["product_lane"])
    return "_".join(name.split("_")[:2])


def validate_definitions(raw_tools: list[dict]) -> tuple[list[ToolDef], list[str]]:
    tools, problems, seen = [], [], set()
    for index, raw in enumerate(raw_tools):
        label = f"tool #{index} ({raw.get('name', 'no name')})" if isinstance(raw, dict) else f"tool #{index}"
        try:
            tool = Tool.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            problems.append(f"{label}: invalid definition: {'.'.join(map(str, first['loc']))}: {first['msg']}")
            continue
        if tool.name in seen:
            problems.append(f"{label}: duplicate tool name `{tool.name}` (the first one is kept)")
            continue
        schema = tool.input_schema
        cls = jsonschema.Draft7Validator if str(schema.get("$schema", "")).startswith(DRAFT7) \
            else jsonschema.Draft202012Validator
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            problems.append(f"{label}: inputSchema is not a valid JSON Schema: {exc.message}")
            continue
        seen.add(tool.name)
        annotations = tool.annotations
        tools.append(ToolDef(name=tool.name, description=tool.description or "", schema=schema,
                             group=_group(tool.name, tool.meta), safe=bool(annotations and annotations.read_only_hint),
                             raw=raw))
    return tools, problems


def load_tools_file(path: str | Path) -> list[dict]:
    data = json.loads(Path(path).read_text())
    return data["tools"] if isinstance(data, dict) else data


def _connect(command: str, args: list[str], errlog) -> Client:
    """A client over stdio. The server's stderr goes to `errlog` (a real file: the caller's
    stderr may be a capture with no file descriptor); the server gets the SDK's minimal
    environment, never our API keys."""
    return Client(stdio_client(StdioServerParameters(command=command, args=args), errlog=errlog))


def list_live(command: str, args: list[str]) -> list[dict]:
    async def run():
        with tempfile.TemporaryFile(mode="w+") as errlog:
            async with _connect(command, args, errlog) as client:
                listed = await client.list_tools()
                return [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]
    return asyncio.run(run())


def execute_live(command: str, args: list[str], calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    """Run calls against a live server in one session: (ok, text) each; errors carry the server's text."""
    async def run():
        out = []
        with tempfile.TemporaryFile(mode="w+") as errlog:
            async with _connect(command, args, errlog) as client:
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    out.append((not result.is_error, text))
        return out
    return asyncio.run(run()) if calls else []
