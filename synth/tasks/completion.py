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
# A function body that only says it is not written (`{ todo!() }`, `{ unimplemented!("...") }`): it
# compiles against any signature, so it defines nothing (the base model copied the context's stubs).
PLACEHOLDER_BODY = re.compile(r"\{\s*(?:todo|unimplemented)!\s*\([^{}]*\)\s*;?\s*\}")
# A reply's own `#[cfg(...)]` line: an item configured out compiles to nothing, so an answer is read
# as always compiled in (SmolLM2 "passed" with `#[cfg(windows)] fn f() { f() }` on Linux).
OWN_CFG = re.compile(r"^[ \t]*#\[cfg\(.*\)\][ \t]*\n", re.M)
# Lints that say code compiled but answers nothing: a function that only calls itself never returns.
HOLLOW_LINTS = frozenset({"unconditional_recursion"})


def answer_code(reply: str) -> str:
    """The first fenced block of a reply (any language tag), else the whole reply; without its own
    `#[cfg(...)]` lines."""
    return without_own_cfg(fenced_code(reply)).strip("\n")


def fenced_code(reply: str) -> str:
    """The first fenced block of a reply as written (its `#[cfg(...)]` lines kept), else the whole reply."""
    match = FENCED.search(reply)
    return match.group(1) if match else reply


def without_own_cfg(code: str) -> str:
    """The code without its `#[cfg(...)]` lines: what it is when always compiled in."""
    return OWN_CFG.sub("", code)


def is_hollow(verdict) -> bool:
    """It compiled, and the compiler says the code does nothing (e.g. `fn len(&self) { self.len() }`)."""
    return any(d.code in HOLLOW_LINTS for d in verdict.diagnostics)


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
    is never defined: an answer to a nameless declaration cannot be told from an unrelated one; nor
    is a function whose whole body is `todo!()` or `unimplemented!()`."""
    code = LITERAL_OR_COMMENT.sub(lambda m: m.group(1) or " ", code)
    return all(_defines_one(code, entry.split()) for entry in wanted)


def _defines_one(code: str, parts: list[str]) -> bool:
    if len(parts) not in (1, 2):
        return False
    *keyword, name = parts
    keywords = keyword or ITEM_KEYWORDS
    heads = "|".join(re.escape(k) + (r"\s*" if k.endswith("!") else r"\s+") for k in keywords)
    return any(not _placeholder_at(code, m.end()) for m in re.finditer(rf"\b(?:{heads}){re.escape(name)}\b", code))


def _placeholder_at(code: str, start: int) -> bool:
    """The item named just before `start` has a body (its first `{` before any `;`) that is a placeholder."""
    brace, semi = code.find("{", start), code.find(";", start)
    return brace >= 0 and not (0 <= semi < brace) and PLACEHOLDER_BODY.match(code, brace) is not None
