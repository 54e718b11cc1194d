"""Metadata comments never belong in an answer: frontmatter blocks, ANCHOR markers, STABLE lines.
Real doc comments (`///`, `//!`) and ordinary comments stay."""
from __future__ import annotations

import re

# `// key: value` lines of a frontmatter block (the audit found `// training_eligible: true`,
# `// syntax_version: ...` at the top of files and inside answers).
FRONTMATTER_KEYS = ("training_eligible", "syntax_version", "difficulty", "rating", "category", "lane",
                    "tags", "source", "title", "status", "stability", "training_prompt", "golden")
FRONTMATTER = re.compile(r"^\s*//\s*(?:@)?(" + "|".join(FRONTMATTER_KEYS) + r")\s*:.*$")
ANCHOR = re.compile(r"^\s*//\s*ANCHOR(_END)?\s*:.*$")
STABLE = re.compile(r"^\s*//\s*STABLE\s*:.*$")
FENCE = re.compile(r"^\s*//\s*-{3,}\s*$")  # `// ---` frontmatter delimiters


METADATA_LINE = re.compile(
    r"^[ \t]*//[ \t]*(?:ANCHOR(?:_END)?[ \t]*:|STABLE[ \t]*:|@?(?:" + "|".join(FRONTMATTER_KEYS)
    + r")[ \t]*:|-{3,}[ \t]*$).*(?:\r?\n|$)", re.M)


def is_metadata_line(line: str) -> bool:
    return bool(ANCHOR.match(line) or STABLE.match(line) or FRONTMATTER.match(line) or FENCE.match(line))


def strip_metadata(text: str) -> str:
    """Drop metadata comment lines; keep everything else byte for byte."""
    if "//" not in text:
        return text
    return METADATA_LINE.sub("", text)
