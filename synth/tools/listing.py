"""`synth tools list --server CMD ...`: list a live server's tools, validate them, print what was
kept (with its group and whether its calls may run) and what was refused and why, and save the
kept ones as a tools file that `[lanes.toolcalls] tools = ...` takes."""
from __future__ import annotations

import json
from pathlib import Path

from .servers import ServerSpec, list_server


def default_name(command: list[str]) -> str:
    """`mcp-server-git --repository x` -> mcp-server-git; `python server.py` -> server."""
    program = Path(command[0]).name
    scripts = [Path(a).stem for a in command[1:] if a.endswith(".py")]
    name = scripts[0] if program.startswith("python") and scripts else program
    return "-".join(filter(None, "".join(c if c.isalnum() else "-" for c in name).split("-"))) or "server"


def list_tools(command: list[str], name: str | None = None, env: list[str] = (), out: str | None = None,
               timeout_s: float = 60) -> dict:
    """The listing as a dict; the kept tools saved to `out` (nothing is written when the server failed)."""
    spec = ServerSpec(name=name or default_name(command), command=tuple(command), env=tuple(env), timeout_s=timeout_s)
    tool_set = list_server(spec)
    result = {"server": spec.describe(), "sha256": tool_set.hash if tool_set.raw else None,
              "kept": [{"name": t.name, "qualified": t.qualified, "group": t.group, "read_only": t.safe}
                       for t in tool_set.tools],
              "refused": tool_set.problems, "error": tool_set.error, "saved": None}
    if tool_set.tools and out:
        kept = {t.name for t in tool_set.tools}
        Path(out).write_text(json.dumps({"server": spec.describe(), "sha256": tool_set.hash,
                                         "tools": [r for r in tool_set.raw if r.get("name") in kept],
                                         "refused": tool_set.problems}, indent=1, sort_keys=True) + "\n")
        result["saved"] = out
    return result


def format_listing(result: dict) -> str:
    server = result["server"]
    lines = [f"{server['name']}: {' '.join(server['command'])}"]
    if result["error"] and not result["kept"]:
        return "\n".join(lines + [f"error: {result['error']}"])
    lines.append(f"kept {len(result['kept'])} tool(s), refused {len(result['refused'])}; "
                 f"tools/list sha256 {result['sha256'][:16]}")
    for tool in result["kept"]:
        lines.append(f"  {tool['name']:<32} group {tool['group']:<20} "
                     + ("read-only: calls are executed" if tool["read_only"] else "not read-only: never executed"))
    lines += [f"  refused: {problem}" for problem in result["refused"]]
    if result["saved"]:
        lines.append(f"saved to {result['saved']} (use it as [lanes.toolcalls] tools = \"...\")")
    return "\n".join(lines)
