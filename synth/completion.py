"""How a model's reply is read, in one place for every consumer: the code it answers with (its
first fenced block, any language tag; the whole reply when it has none), whether it is exactly one
fenced block, and whether that code defines what was asked for. Back-translation, RFT acceptance
and the GRPO reward all read replies through here, so they cannot disagree on the same reply."""
from __future__ import annotations

import re

# A fence opens with a language tag (`rust`, `c++`, or none) and a newline.
FENCED = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
ONLY_FENCED = re.compile(r"\s*```[\w+-]*\n.*?```\s*", re.S)
# Keywords that introduce a named item (Rust; Vox functions and types use `fn` and `type` too).
ITEM_KEYWORDS = ("fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod", "macro_rules!")
KEYWORD_OF_KIND = {"method": "fn", "macro": "macro_rules!"}  # a declaration kind whose keyword differs
# A string or char literal (kept, so `"http://x"` is no comment) or a `//` or `/* */` comment.
LITERAL_OR_COMMENT = re.compile(r'("(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\')|//[^\n]*|/\*.*?\*/', re.S)


def answer_code(reply: str) -> str:
    """The first fenced block of a reply (any language tag), else the whole reply."""
    match = FENCED.search(reply)
    return (match.group(1) if match else reply).strip("\n")


def code_is_final(reply: str) -> bool:
    """Its first fenced block is closed: `answer_code` reads the same whatever follows."""
    return FENCED.search(reply) is not None


def is_one_fenced_block(reply: str) -> bool:
    """Exactly one fenced block and nothing but whitespace around it."""
    return bool(ONLY_FENCED.fullmatch(reply)) and len(FENCED.findall(reply)) == 1


def definition_of(kind: str, name: str) -> str:
    """What an answer in place of a declaration must define: `fn name` for a function or method."""
    return f"{KEYWORD_OF_KIND.get(kind, kind)} {name}" if name else ""


def defines(code: str, wanted: list[str]) -> bool:
    """Does the code define every wanted item, outside comments? An entry is `keyword name`
    (`fn gcd`: only a function counts) or a bare `name` (any item keyword counts). An empty entry
    is never defined: an answer to a nameless declaration cannot be told from an unrelated one."""
    code = LITERAL_OR_COMMENT.sub(lambda m: m.group(1) or " ", code)
    return all(_defines_one(code, entry.split()) for entry in wanted)


def _defines_one(code: str, parts: list[str]) -> bool:
    if len(parts) not in (1, 2):
        return False
    *keyword, name = parts
    keywords = keyword or ITEM_KEYWORDS
    heads = "|".join(re.escape(k) + (r"\s*" if k.endswith("!") else r"\s+") for k in keywords)
    return re.search(rf"\b(?:{heads}){re.escape(name)}\b", code) is not None
