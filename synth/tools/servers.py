"""Tool sets: the tools of one configured MCP server, listed live at the start of a run, or of a
saved `tools/list` file. Each set is saved into the run directory with the hash of its list, so a
row can be traced to the exact definitions it was checked against; a server that cannot be
started or listed is an error naming it, and the other sets go on."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path



from .settings import SERVER_TIMEOUT_S
from .definitions import ServerFailed, ToolDef, list_live, load_tools_file, validate_definitions


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: tuple[str, ...]  # the program and its arguments
    env: tuple[str, ...] = ()  # names of environment variables passed through (values are never saved)
    timeout_s: float = SERVER_TIMEOUT_S  # listing the server's tools, and each session of calls

    def environment(self) -> dict[str, str]:
        return {k: os.environ[k] for k in self.env if k in os.environ}

    def describe(self) -> dict:
        return {"name": self.name, "command": list(self.command), "env": list(self.env)}


@dataclass
class ToolSet:
    name: str  # the server's name; "" for a saved file
    raw: list = field(default_factory=list)  # the tools/list result as received
    tools: list[ToolDef] = field(default_factory=list)  # the valid ones
    problems: list[str] = field(default_factory=list)  # refused definitions, and why
    error: str | None = None  # the set could not be had at all
    server: ServerSpec | None = None  # where calls of read-only tools run (None: not executed)
    source: str = ""  # the saved file, for a file's set

    @property
    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()

    @property
    def label(self) -> str:
        return f"MCP server `{self.name}`" if self.name else f"tools file {self.source}"

    def record(self) -> dict:
        """What is saved into the run directory."""
        return {"server": self.server.describe() if self.server else None, "source": self.source or None,
                "sha256": self.hash, "tools": self.raw, "kept": [t.name for t in self.tools],
                "refused": self.problems, "error": self.error}


def list_server(spec: ServerSpec) -> ToolSet:
    tool_set = ToolSet(name=spec.name, server=spec)
    try:
        tool_set.raw = list_live(spec.command[0], list(spec.command[1:]), spec.environment(), spec.timeout_s)
    except ServerFailed as exc:
        tool_set.error = f"{tool_set.label} ({' '.join(spec.command)}): tools/list failed: {exc}"
        return tool_set
    tool_set.tools, problems = validate_definitions(tool_set.raw, spec.name)
    tool_set.problems = [f"{tool_set.label}: {p}" for p in problems]
    if tool_set.raw and not tool_set.tools:
        tool_set.error = f"{tool_set.label}: none of its {len(tool_set.raw)} tools is valid ({problems[0]})"
    elif not tool_set.raw:
        tool_set.error = f"{tool_set.label}: tools/list returned no tools"
    return tool_set


def load_file(path: str, server: ServerSpec | None = None) -> ToolSet:
    tool_set = ToolSet(name="", server=server, source=path)
    try:
        tool_set.raw = load_tools_file(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        tool_set.error = f"{tool_set.label}: cannot be read: {exc}"
        return tool_set
    tool_set.tools, problems = validate_definitions(tool_set.raw)
    tool_set.problems = [f"{tool_set.label}: {p}" for p in problems]
    return tool_set


def name_clashes(tool_sets: list[ToolSet]) -> list[str]:
    """Tool names offered by more than one set (each keeps its own, namespaced by its server)."""
    owners = defaultdict(list)
    for tool_set in tool_sets:
        for tool in tool_set.tools:
            owners[tool.name].append(tool_set)
    return [f"tool `{name}` is offered by " + " and ".join(s.label for s in sets)
            + " (rows name them " + ", ".join(f"`{t.qualified}`" for s in sets for t in s.tools if t.name == name) + ")"
            for name, sets in sorted(owners.items()) if len(sets) > 1]


def save_sets(directory: Path, tool_sets: list[ToolSet]) -> dict:
    """Each set's record into directory/<name>.json (older sets' files removed); returns
    {name: {"sha256", "file", "tools", "refused"}} for the manifest."""
    if directory.is_dir():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    listed = {}
    for tool_set in tool_sets:
        stem = tool_set.name or "_saved"
        (directory / f"{stem}.json").write_text(json.dumps(tool_set.record(), indent=1, sort_keys=True) + "\n")
        listed[stem] = {"sha256": tool_set.hash, "file": f"tools/{stem}.json", "tools": len(tool_set.tools),
                        "refused": len(tool_set.problems), "error": tool_set.error}
    return listed


def snapshot_tool_lists(out: Path, snapshot: Path) -> dict | None:
    """Copy the run's saved tool lists into a snapshot; their hashes for its manifest."""
    saved = out / "tools"
    if not saved.is_dir():
        return None
    shutil.copytree(saved, snapshot / "tools", dirs_exist_ok=True)
    return {p.stem: json.loads(p.read_text())["sha256"] for p in sorted(saved.glob("*.json"))}


def spec_of(server) -> ServerSpec:
    """A ServerSpec from a `[[lanes.toolcalls.servers]]` entry."""
    return ServerSpec(name=server.name, command=tuple(server.command), env=tuple(server.env),
                      timeout_s=server.timeout_s)


def configured_sets(settings, saved_dir: Path | None = None) -> list[ToolSet]:
    """The saved file's set (`tools`, executed on `server` if given), then each server's, listed
    live. A server that cannot be listed keeps the list saved by the last run in `saved_dir`
    (its error still says so), so one bad night does not drop its rows."""
    sets = []
    if settings.tools:
        runner = ServerSpec(name="", command=tuple(settings.server)) if settings.server else None
        sets.append(load_file(settings.tools, runner))
    for server in settings.servers:
        tool_set = list_server(spec_of(server))
        previous = _previous(saved_dir, tool_set) if tool_set.error and not tool_set.raw else None
        if previous is not None:
            tool_set.raw = previous
            tool_set.tools, _ = validate_definitions(previous, server.name)
            tool_set.error += (f"; its rows are kept from the list saved by the last run "
                               f"(sha256 {tool_set.hash[:12]}), their calls not run again")
        sets.append(tool_set)
    return sets


def _previous(saved_dir: Path | None, tool_set: ToolSet) -> list | None:
    path = saved_dir / f"{tool_set.name}.json" if saved_dir else None
    if path is None or not path.exists():
        return None
    record = json.loads(path.read_text())
    same = record.get("server") == tool_set.server.describe()
    return record["tools"] if same and record.get("tools") else None
