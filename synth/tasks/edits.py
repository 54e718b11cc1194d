"""Repair answers as edits: only the lines that change, as SEARCH/REPLACE blocks, applied to the
broken declaration to give the answer that is judged. A small model that must write a whole
declaration again to fix one line drifts: of the loop's held-out repair answers the SFT model got
wrong, 49 of 123 changed lines the fix does not touch (every reference differs from its broken
declaration in one or two lines). An edit cannot touch what it does not name.

    <<<<<<< SEARCH
        (len_bit + 6) / 7
    =======
        (len_bits + 6) / 7
    >>>>>>> REPLACE
"""
from __future__ import annotations

import difflib
import re

from synth.prompting.templates import DECLARATION_INSTRUCTION, language_and_fence

EDIT_INSTRUCTION = ("Reply with the lines to change only, as SEARCH/REPLACE blocks "
                    "(<<<<<<< SEARCH, the lines as they are, =======, the lines as they should be, >>>>>>> REPLACE).")
SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
BLOCK = re.compile(rf"^{SEARCH}[ \t]*\n(.*?)^{DIVIDER}[ \t]*\n(.*?)^{REPLACE}[ \t]*$", re.S | re.M)


def render_edit(broken: str, fixed: str) -> str:
    """The SEARCH/REPLACE blocks that turn `broken` into `fixed`: each changed run of lines, with
    the lines around it added until its SEARCH part occurs once in `broken` (an insertion, or a
    line such as `}` that repeats, is anchored by its neighbours)."""
    old, new = broken.split("\n"), fixed.split("\n")
    blocks: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        while _occurrences(old, old[i1:i2]) != 1 and (i1 > 0 or i2 < len(old)):
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            if _occurrences(old, old[i1:i2]) != 1 and i2 < len(old):
                i2, j2 = i2 + 1, j2 + 1
        if blocks and i1 < blocks[-1][1]:  # grown into the last block: one block covers both
            a1, _, b1, _ = blocks.pop()
            i1, j1 = min(a1, i1), min(b1, j1)
        blocks.append((i1, i2, j1, j2))
    return "\n".join(f"{SEARCH}\n" + "".join(line + "\n" for line in old[i1:i2]) + f"{DIVIDER}\n"
                     + "".join(line + "\n" for line in new[j1:j2]) + REPLACE for i1, i2, j1, j2 in blocks)


def edit_blocks(reply: str) -> list[tuple[list[str], list[str]]]:
    """The (search lines, replace lines) of each SEARCH/REPLACE block of a reply, in order."""
    return [(_lines(search), _lines(replace)) for search, replace in BLOCK.findall(reply)]


def apply_edit(broken: str, reply: str) -> str | None:
    """`broken` with the reply's blocks applied in order, each at the first place its SEARCH lines
    stand (as written, else with each line's spaces ignored); None when the reply has no block or
    a block's lines are not there: the edit cannot be read, so nothing is guessed."""
    blocks = edit_blocks(reply)
    if not blocks:
        return None
    lines = broken.split("\n")
    for search, replace in blocks:
        at = _find(lines, search)
        if at is None:
            return None
        lines[at:at + len(search)] = replace
    return "\n".join(lines)


def _find(lines: list[str], search: list[str]) -> int | None:
    if not search:
        return None  # an empty SEARCH names no place
    for same in (lambda a, b: a == b, lambda a, b: a.strip() == b.strip()):
        for at in range(len(lines) - len(search) + 1):
            if all(same(a, b) for a, b in zip(lines[at:at + len(search)], search)):
                return at
    return None


def _occurrences(lines: list[str], run: list[str]) -> int:
    if not run:
        return 0
    return sum(lines[at:at + len(run)] == run for at in range(len(lines) - len(run) + 1))


def _lines(part: str) -> list[str]:
    return part[:-1].split("\n") if part.endswith("\n") else (part.split("\n") if part else [])


def asks_for_declaration(task) -> bool:
    """A task whose prompt shows a broken declaration and asks for it corrected (repair,
    self-repair, a compile-feedback turn): its answer can be an edit of that declaration."""
    return bool(task.broken) and task.prompt.rstrip().endswith(DECLARATION_INSTRUCTION)


def edit_prompt(prompt: str) -> str:
    """A repair prompt asking for SEARCH/REPLACE blocks instead of the whole declaration."""
    body = prompt.rstrip()
    if not body.endswith(DECLARATION_INSTRUCTION):
        raise ValueError("not a repair prompt (it does not end asking for the corrected declaration)")
    return body[:-len(DECLARATION_INSTRUCTION)] + EDIT_INSTRUCTION


def prompt_for(task, edits: bool) -> str:
    """What a model is asked for the task: with `edits`, a broken declaration's fix as an edit."""
    return edit_prompt(task.prompt) if edits and asks_for_declaration(task) else task.prompt


def answer_for(task, reply: str, edits: bool) -> str:
    """A model's reply to `prompt_for(task, edits)` as the answer the judge reads. An edit's: the
    declaration it makes, fenced, the reply as written after it (kept for reading; the judge reads
    the first block); a reply whose edit cannot be applied answers nothing: it is kept as comments."""
    if not (edits and asks_for_declaration(task)):
        return reply
    applied = apply_edit(task.broken, reply)
    if applied is None:
        return "// no edit that applies to the declaration:\n" + "".join(f"// {line}\n" for line in reply.split("\n"))
    # fenced here, not through synth.tasks.baselines.fenced: that module's imports would put the
    # GRPO reward nine modules above the error root
    return f"```{language_and_fence(task.lang)[1]}\n{applied}\n```\n{reply}"


def edit_row(row: dict) -> dict:
    """A repair row that answers with the whole declaration, asked and answered as an edit
    instead (the same check, the same verdict); any other row as it is."""
    if row.get("answer_format") != "declaration" or not row.get("broken") or not row.get("fixed"):
        return row
    prompt, answer = edit_prompt(row["prompt"]), render_edit(row["broken"], row["fixed"])
    messages = [dict(m) for m in row.get("messages") or ()]
    if messages:
        messages[-2]["content"], messages[-1]["content"] = prompt, answer
    return {**row, "prompt": prompt, "response": answer, "answer_format": "edit",
            **({"messages": messages} if messages else {})}

