"""Prompt templates live in prompts/ as files; a row records the hash of the template it used."""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


@functools.cache
def template(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")


def template_hash(name: str) -> str:
    return hashlib.sha256(template(name).encode()).hexdigest()[:12]


def system_prompt() -> str:
    return template("system").strip()
