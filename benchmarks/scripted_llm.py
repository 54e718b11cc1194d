"""Deterministic replies for every prompt the synthesis stages send, for the loopback provider
server: an instruction that names the declaration, the original code when asked to regenerate or
sample it (so the compiler accepts it), YES from the judge, and a schema-valid tool call. Replies
depend only on the request, as a cached provider's would."""
from __future__ import annotations

import json
import re


def _instruction(name: str, owner: str | None) -> str:
    extra = f" It is a method of `{owner}`." if owner else ""
    return (f"Write a function `{name}` that takes its inputs as described and returns the result, "
            f"handling the edge cases carefully.{extra}")


def _arguments(schema: dict) -> dict:
    args = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if kind == "integer":
            args[name] = 5
        elif kind == "string":
            args[name] = prop.get("enum", [None])[0] or {"status": "open", "table": "Task"}.get(name, "shop")
        elif kind == "boolean":
            args[name] = True
    return args


def stage_responder(decls):
    """`decls`: the declarations the run extracts (their code answers regeneration and RFT)."""
    code = {}
    for d in decls:
        code.setdefault(d.name, d.clean_text)

    def respond(body: dict) -> str | None:
        prompt = body["messages"][-1]["content"]
        if "Write the task a programmer" in prompt:
            name = re.search(r"its name `(\w+)`", prompt).group(1)
            owner = re.search(r"a method of `([^`]+)`", prompt)
            return _instruction(name, owner.group(1).lstrip("&") if owner else None)
        if "Does this task describe the code" in prompt:
            return "YES"
        if "Tool description:" in prompt:
            schema = json.loads(re.search(r"Input schema \(JSON Schema\): (.*)\n", prompt).group(1))
            desc = re.search(r"Tool description: (.*)\n", prompt).group(1)
            variant = re.search(r"variant (\d+)", prompt).group(1)
            return json.dumps({"task": f"I need help with this ({variant}): {desc.lower()}",
                               "arguments": _arguments(schema)})
        named = re.search(r"function `(\w+)`", prompt)
        if named and named.group(1) in code:  # regenerate, or an RFT sample
            return f"```rust\n{code[named.group(1)]}\n```"
        return None

    return respond
