"""The checks a generated tool call passes, in order: format, schema, (execution), leakage."""
from __future__ import annotations

import re

from mcp.types import CallToolRequestParams
from pydantic import ValidationError



def check_format(name, arguments, tools: dict) -> str | None:
    try:
        CallToolRequestParams(name=name, arguments=arguments)
    except ValidationError as exc:
        return f"not a valid tool call: {exc.errors()[0]['msg']}"
    if name not in tools:
        return f"names a tool that does not exist: `{name}`"
    return None


def check_schema(arguments: dict, tool) -> str | None:
    errors = sorted(tool.validator().iter_errors(arguments), key=lambda e: list(e.path))
    if errors:
        where = "/".join(map(str, errors[0].path)) or "(top level)"
        return f"arguments do not match the schema at {where}: {errors[0].message}"
    return None


def name_variants(name: str) -> set[str]:
    """The tool's name and the obvious ways to write it in a sentence."""
    words = [w for w in re.split(r"[_\-.]", name) if w]
    variants = {name, " ".join(words), "".join(words), words[0] + "".join(w.title() for w in words[1:])}
    if len(words) > 2 and words[0] in ("vox", "mcp"):
        rest = words[1:]
        variants |= {"_".join(rest), " ".join(rest), "".join(rest)}
    return {v.lower() for v in variants if len(v) >= 4}


def check_leak(task: str, tool) -> str | None:
    text = task.lower()
    for variant in sorted(name_variants(tool.name), key=len, reverse=True):
        if variant in text:
            return f"the task names the tool (`{variant}`)"
    return None
