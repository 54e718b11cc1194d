"""Checks on an instruction written from a declaration, before any money goes into regenerating
code from it. Each problem is a short reason that goes back to the writer as feedback."""
from __future__ import annotations

import re

from synth.extract.model import Declaration
from synth.prompting.templates import language_and_fence, with_context

MIN_CHARS, MAX_CHARS = 40, 1500
MIN_COPIED_LINE = 25  # a line of the answer this long found verbatim in the instruction is a leak


def instruction_problems(instruction: str, decl: Declaration) -> list[str]:
    problems = []
    text = instruction.strip()
    if "```" in text:
        problems.append("contains a code block")
    for line in decl.body.splitlines() or decl.clean_text.splitlines():
        line = line.strip()
        if len(line) >= MIN_COPIED_LINE and not line.startswith("//") and line in text:
            problems.append(f"copies code from the answer: `{line[:60]}`")
            break
    for name in required_names(decl):
        if not re.search(rf"\b{re.escape(name)}\b", text):
            problems.append(f"does not name `{name}`")
    if len(text) < MIN_CHARS:
        problems.append(f"too short ({len(text)} characters)")
    elif len(text) > MAX_CHARS:
        problems.append(f"too long ({len(text)} characters)")
    elif not re.search(r"[.!?)`\"]$", text):
        problems.append("looks truncated (no closing punctuation)")
    return problems


def required_names(decl: Declaration) -> list[str]:
    """The public names the answer must define: its own name, and for a method its type."""
    names = [decl.name] if decl.name else []
    if decl.kind == "method" and decl.self_type:
        names.append(re.split(r"[<\s]", decl.self_type.lstrip("&"))[0])
    return names


def row_prompt(decl: Declaration, instruction: str) -> str:
    """What the trained model sees: the task, and the declarations the answer was verified with."""
    _, fence = language_and_fence(decl.lang)
    owner = decl.owner
    text = instruction.strip() + (f"\n\nIt is a method inside:\n```{fence}\n{owner}\n```" if owner else "")
    return with_context(text, decl.context, fence)
