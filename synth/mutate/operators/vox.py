"""Mutation operators for Vox declarations, on the structure the extraction parser sees (strings
and comments masked, braces balanced). Each aims at an error `vox check` reports; the retired
syntax operator is capped low when rows are balanced (the audit found retired-form mutants
over-represented)."""
from __future__ import annotations

import re

from synth.extract.vox import masked, parse_vox

from synth.mutate.operator import Edit, Operator

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SWAP_TYPE = {"int": "str", "str": "int", "bool": "int", "float": "str"}


def _head(code: str):
    return re.search(r"\b(fn|query|mutation|component|server|tool|workflow|activity)\s+\w+\s*\(", code)


def _params(code: str) -> list[str]:
    head = _head(code)
    if not head:
        return []
    depth, start = 0, head.end() - 1
    for i in range(start, len(code)):
        depth += code[i] == "("
        depth -= code[i] == ")"
        if depth == 0:
            return re.findall(r"([A-Za-z_]\w*)\s*:", code[start + 1:i])
    return []


def _body_start(code: str) -> int:
    head = _head(code)
    brace = code.find("{", head.end() if head else 0)
    return brace if brace >= 0 else len(code)


def undefined_name(text: str) -> list[Edit]:
    code = masked(text)
    params = set(_params(code))
    edits = []
    for m in IDENT.finditer(code, _body_start(code)):
        if m.group(0) in params and not code[:m.start()].rstrip().endswith("."):
            wrong = m.group(0)[:-1] if len(m.group(0)) > 2 else m.group(0) + "s"
            edits.append(Edit(m.start(), m.end(), wrong if wrong not in params else m.group(0) + "_x"))
    return edits


def wrong_arity(text: str) -> list[Edit]:
    code = masked(text)
    edits = []
    for m in re.finditer(r"(?<![.\w])([a-z_]\w*)\(", code, ):
        if m.start() < _body_start(code) or m.group(1) in ("fn", "if", "match", "for", "while", "assert"):
            continue
        depth, args, last_comma = 0, 0, None
        for i in range(m.end() - 1, len(code)):
            c = code[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    inner = code[m.end():i]
                    if inner.strip():
                        cut = (last_comma if last_comma is not None else m.end())
                        edits.append(Edit(cut, i, ""))
                    break
            elif c == "," and depth == 1:
                last_comma, args = i, args + 1
    return edits


def wrong_return_type(text: str) -> list[Edit]:
    code = masked(text)
    m = re.search(r"\)\s*to\s+(int|str|bool|float)\b", code[:_body_start(code)])
    if not m:
        return []
    return [Edit(m.start(1), m.end(1), SWAP_TYPE[m.group(1)])]


def constructor_confusion(text: str) -> list[Edit]:
    code = masked(text)
    swaps = {"Some": "Ok", "Ok": "Some", "Error": "Err"}
    return [Edit(m.start(1), m.end(1), swaps[m.group(1)]) for m in re.finditer(r"\b(Some|Ok|Error)\(", code)]


def non_exhaustive_match(text: str) -> list[Edit]:
    code = masked(text)
    edits = []
    for m in re.finditer(r"\bmatch\b[^{]*\{", code):
        depth, end = 0, len(code)
        for i in range(m.end() - 1, len(code)):
            depth += code[i] == "{"
            depth -= code[i] == "}"
            if depth == 0:
                end = i
                break
        arms = list(re.finditer(r"^[ \t]*[A-Za-z_]\w*\s*(?:\([^)]*\))?\s*=>.*\n", code[m.end():end], re.M))
        if len(arms) >= 2 and not any(a.group(0).strip().startswith("_") for a in arms):
            for a in arms:
                edits.append(Edit(m.end() + a.start(), m.end() + a.end(), ""))
    return edits


def retired_syntax(text: str) -> list[Edit]:
    code = masked(text)
    edits = []
    to = re.search(r"\)\s*(to)\s+\S", code[:_body_start(code)])
    if to:
        edits.append(Edit(to.start(1), to.end(1), "->"))
    for m in re.finditer(r"^([ \t]*)(return)\b", code, re.M):
        edits.append(Edit(m.start(2), m.end(2), "ret"))
    table = re.match(r"(?:pub\s+)?(table)\s+\w+", code)
    if table:
        edits.append(Edit(table.start(1), table.end(1), "@table type"))
    return edits


VOX_OPERATORS = [
    Operator("undefined_name", "vox/names/undefined", undefined_name),
    Operator("wrong_arity", "vox/types/arity", wrong_arity),
    Operator("wrong_return_type", "vox/types/type-mismatch", wrong_return_type),
    Operator("constructor_confusion", "vox/types/unknown-constructor|type-mismatch", constructor_confusion),
    Operator("non_exhaustive_match", "vox/match/non-exhaustive", non_exhaustive_match),
    Operator("retired_syntax", "vox/syntax/retired-form", retired_syntax),
]
RETIRED_OPERATORS = {"retired_syntax"}


def vox_apply(text: str, edit: Edit) -> str:
    return text[:edit.start] + edit.replacement + text[edit.end:]


def vox_sites(text: str, operator: Operator) -> list[Edit]:
    """Edits that leave one well-formed declaration (the structural parser still reads it)."""
    out = []
    for edit in operator.sites(text):
        mutated = vox_apply(text, edit)
        parsed = parse_vox(mutated)
        if mutated != text and not parsed.errors and len(parsed.items) == 1:
            out.append(edit)
    return out
