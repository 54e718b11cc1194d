"""Prompt templates live in prompts/ as files; a row records the hash of the template it used."""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"


@functools.cache
def template(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")


def template_hash(name: str) -> str:
    return hashlib.sha256(template(name).encode()).hexdigest()[:12]


def system_prompt() -> str:
    return template("system").strip()


def with_context(instruction: str, context: str, fence: str = "rust") -> str:
    """The user turn of every lane whose answer needs declarations around it: the same bytes at
    training, serving and evaluation. The context comes first and the instruction last: with the
    context last, SmolLM2-135M after SFT answered 10 of 53 held-out tasks by copying that block back
    (E0592, E0428: duplicate definitions); 1 with it first."""
    if not context.strip():
        return instruction.strip()
    return (f"These declarations already exist; use them, do not write them again:\n```{fence}\n{context.strip()}\n```"
            f"\n\n{instruction.strip()}")


# what a repair prompt (a row's, a feedback turn's) asks for last
DECLARATION_INSTRUCTION = "Reply with the corrected declaration only."


def language_and_fence(lang: str) -> tuple[str, str]:
    """How prompts name a language, and the tag of its code fences."""
    return ("Rust", "rust") if lang == "rust" else ("Vox", "vox")
