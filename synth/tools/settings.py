"""The tool-call lane's settings: `[lanes.toolcalls]`, taken whole by its engine (synth/tools/),
and the live MCP servers it names."""
from __future__ import annotations

from pydantic import Field

from synth.settings.strict import ACROSS_ITEMS, LaneSettings, Strict

SERVER_TIMEOUT_S = 60.0  # listing a server's tools, and each session of calls


class McpServerSettings(Strict):
    """[[lanes.toolcalls.servers]]: listed live at the start of each run; its tools are named `NAME__tool`."""
    name: str = Field(pattern=r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$")
    command: list[str] = Field(min_length=1)  # the program and its arguments (stdio)
    env: list[str] = Field(default_factory=list)  # names of environment variables to pass through (none by default)
    timeout_s: float = Field(SERVER_TIMEOUT_S, gt=0)


class ToolcallsSettings(LaneSettings):
    """[lanes.toolcalls], taken whole by `verify_calls` and `build_rows` (synth/tools/calls.py)."""
    model: str = ""
    tools: str = Field("", json_schema_extra=ACROSS_ITEMS)  # (each tool set is an item, keyed by its hash and server) a JSON file of MCP tool definitions (the `tools/list` result)
    server: list[str] = Field(default_factory=list, json_schema_extra=ACROSS_ITEMS)  # command + args of the live MCP server (stdio) that runs
    # the saved file's read-only tools' calls; rows whose call fails are rejected
    servers: list[McpServerSettings] = Field(default_factory=list, json_schema_extra=ACROSS_ITEMS)
    per_tool: int = Field(2, gt=0)
    k: int = Field(10, gt=1, json_schema_extra=ACROSS_ITEMS)  # menus are rebuilt each run, without calls

    def check(self) -> None:
        if not (self.tools or self.servers):
            raise ValueError("lanes.toolcalls is enabled but names no tools file and no servers")
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError(f"lanes.toolcalls.servers: two servers are named {max(names, key=names.count)!r}")

    def resolve_paths(self, resolve) -> None:
        self.tools = resolve(self.tools) or ""
        self.server = [resolve(a) if a.endswith(".py") else a for a in self.server]
        for server in self.servers:
            server.command = [resolve(a) if a.endswith(".py") else a for a in server.command]
