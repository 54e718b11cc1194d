"""The gate ablation's other arm (`synth bench loop --ablate mens`): error-correction rows as the
audited pipeline made them (its section 2.2), from the same declarations as synth's repair rows.

Each of synth's repair rows in the snapshot becomes one audit-style row: the declaration broken by
one of the audit's 4 textual mutations (a missing `}`, `fn` -> `fun`, `let` -> `lett`, the return
type dropped; seeded, among those that apply), never compiled, the prompt without any compiler
diagnostic, the whole declaration as the answer. Everything else about the prompt (the context,
the impl a method sits in, the instruction) is synth's, so the two arms differ only in what the
gate and the real diagnostics add. Doc rows and the validation split are kept as they are."""
from __future__ import annotations

import random
import re
from pathlib import Path

from synth.rows.rowfile import existing_rows, read_rows, rows_path, write_rows

RETURN_TYPE = re.compile(r"\)\s*->\s*[^{]+?(?=\s*(?:where\b|\{))")


def missing_brace(code: str) -> str | None:
    cut = code.rfind("}")
    return code[:cut] + code[cut + 1:] if cut >= 0 else None


def fun_keyword(code: str) -> str | None:
    return re.sub(r"\bfn\b", "fun", code, count=1) if re.search(r"\bfn\b", code) else None


def lett_keyword(code: str) -> str | None:
    return re.sub(r"\blet\b", "lett", code, count=1) if re.search(r"\blet\b", code) else None


def dropped_return_type(code: str) -> str | None:
    return RETURN_TYPE.sub(")", code, count=1) if RETURN_TYPE.search(code) else None


MUTATIONS = (missing_brace, fun_keyword, lett_keyword, dropped_return_type)


def audit_broken(code: str, seed: int, key: str) -> tuple[str, str]:
    """(broken code, the mutation's name): one of the audit's mutations that changes the code."""
    options = [(m.__name__, out) for m in MUTATIONS if (out := m(code)) is not None and out != code]
    name, broken = random.Random(f"{seed}:mens:{key}").choice(options)
    return broken, name


def audit_row(row: dict, seed: int) -> dict:
    broken, mutation = audit_broken(row["fixed"], seed, row["id"])
    head, _, rest = row["prompt"].partition("The declaration:\n")
    instruction = rest.rsplit("\n\n", 1)[-1]  # "Reply with the corrected declaration only."
    prompt = f"{head}The declaration:\n```rust\n{broken.rstrip()}\n```\n\n{instruction}"
    messages = [m for m in row["messages"] if m["role"] == "system"] + [
        {"role": "user", "content": prompt}, {"role": "assistant", "content": row["fixed"]}]
    return {**row, "prompt": prompt, "messages": messages, "broken": broken, "operator": f"mens_{mutation}",
            "diagnostic_codes": [], "mens": True}


def write_mens_snapshot(run: Path, out: Path, seed: int) -> dict:
    """RUN's train/val with every repair row replaced by its audit-style twin; returns the counts."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in ("train", "val"):
        path = existing_rows(run, split)
        rows = read_rows(path) if path.exists() else []
        made = [audit_row(r, seed) if r["task"] == "repair" else r for r in rows]
        write_rows(rows_path(out, split), made)
        counts[split] = {"rows": len(made), "audit_style": sum(1 for r in made if r.get("mens"))}
    return counts
