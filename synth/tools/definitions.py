"""Tool definitions from a saved `tools/list` result or a live MCP server (stdio), validated:
the `mcp.types.Tool` model, and `inputSchema` as a valid JSON Schema of its declared draft
(2020-12 unless it says draft-07). A bad definition is reported by name and skipped.
Tools are namespaced by the server they came from (`git__git_status`); a saved file's are not."""
from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Tool
from pydantic import ValidationError

from oracles.errors import SynthError
from .groups import group_of, stem_groups

DRAFT7 = "http://json-schema.org/draft-07/schema"


@dataclass
class ToolDef:
    name: str
    description: str
    schema: dict
    group: str  # product_lane, else the server split by shared name stems (synth/tools/groups.py)
    safe: bool  # read-only: may be executed against the live server
    raw: dict = field(repr=False, default_factory=dict)
    server: str = ""  # the configured server it came from; "" for a saved file

    @property
    def qualified(self) -> str:
        """The name rows use: unique across servers, and valid as an OpenAI function name too."""
        return f"{self.server}__{self.name}" if self.server else self.name

    def validator(self):
        cls = jsonschema.Draft7Validator if str(self.schema.get("$schema", "")).startswith(DRAFT7) \
            else jsonschema.Draft202012Validator
        return cls(self.schema)


def validate_definitions(raw_tools: list[dict], server: str = "") -> tuple[list[ToolDef], list[str]]:
    tools, problems, seen = [], [], set()
    if not isinstance(raw_tools, list):
        return [], [f"the tool list is a {type(raw_tools).__name__}, not a list"]
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
                             group=tool.meta or {}, safe=bool(annotations and annotations.read_only_hint),
                             raw=raw, server=server))
    stems = stem_groups([t.name for t in tools])
    for t in tools:  # `group` held the tool's _meta until every stem was known
        t.group = group_of(server, stems[t.name], t.group)
    return tools, problems


def load_tools_file(path: str | Path) -> list[dict]:
    data = json.loads(Path(path).read_text())
    return data["tools"] if isinstance(data, dict) else data


def _connect(command: str, args: list[str], errlog, env: dict | None) -> Client:
    """A client over stdio. The server's stderr goes to `errlog` (a real file: the caller's
    stderr may be a capture with no file descriptor); the server gets the SDK's minimal
    environment plus only the variables named in `env`, never our API keys."""
    return Client(stdio_client(StdioServerParameters(command=command, args=args, env=env), errlog=errlog))


class ServerFailed(SynthError, RuntimeError):
    """The server could not be started or talked to; the message ends with its stderr's last lines."""


def _session(command: str, args: list[str], work, env: dict | None = None, timeout_s: float = 60):
    """Run `work(client)` in one session; any failure becomes ServerFailed with the server's stderr."""
    async def run():
        with tempfile.TemporaryFile(mode="w+") as errlog:
            try:
                with anyio.fail_after(timeout_s):
                    async with _connect(command, args, errlog, env) as client:
                        return await work(client)
            except Exception as exc:  # the SDK raises exception groups, OSError, MCPError...
                errlog.seek(0)
                tail = " | ".join(errlog.read().strip().splitlines()[-3:])
                raise ServerFailed(_reason(exc, timeout_s) + (f"; its stderr: {tail}" if tail else "")) from None
    return asyncio.run(run())


def _reason(exc: BaseException, timeout_s: float) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g}s"
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"its answer is not a valid MCP result: {'.'.join(map(str, first['loc']))}: {first['msg']}"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start it: no such command {exc.filename!r}" if exc.filename else "cannot start it"
    text = str(exc) or type(exc).__name__
    return "it closed the connection (exited?)" if "Connection closed" in text else text


def list_live(command: str, args: list[str], env: dict | None = None, timeout_s: float = 60) -> list[dict]:
    async def work(client):
        listed = await client.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]
    return _session(command, args, work, env, timeout_s)


def execute_live(command: str, args: list[str], calls: list[tuple[str, dict]], env: dict | None = None,
                 timeout_s: float = 60) -> list[tuple[bool, str]]:
    """Run calls against a live server in one session: (ok, text) each; errors carry the server's text."""
    async def work(client):
        out = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            out.append((not result.is_error, text))
        return out
    return _session(command, args, work, env, timeout_s * max(1, len(calls))) if calls else []
