"""[tokens]: only rows (and so tasks) that fit the model being trained. A row's prompt (the user
turn) and answer are counted with that model's tokenizer (its `tokenizer.json`, read with the
`tokenizers` library: the same counts the trainer gets), else with OpenAI's o200k vocabulary.
Lanes ask before compiling anything, so what cannot fit costs no compiler run; a row over a
limit is rejected with the reason, never silently truncated later."""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from oracles.errors import MissingInput
from synth.settings.strict import Strict
from pydantic import Field

TOO_LONG = "over the token limits"  # the kind of the rejections `Fit.over` gives the reason of
_REASON = re.compile(rf"{TOO_LONG}: (prompt|answer) (\d+) > (\d+)")


class TokenSettings(Strict):
    tokenizer: str | None = None  # a local model or tokenizer folder (tokenizer.json); None: o200k counts
    max_prompt: int = Field(0, ge=0)  # tokens of the prompt (the user turn); 0: no limit
    max_answer: int = Field(0, ge=0)  # tokens of the answer; 0: no limit


class Fit:
    """Counts tokens and says whether a prompt and an answer fit the limits."""

    def __init__(self, limits: TokenSettings | None = None):
        self.limits = limits or TokenSettings()
        self.active = bool(self.limits.max_prompt or self.limits.max_answer)
        self._tokenizer = None
        if self.limits.tokenizer:
            path = Path(self.limits.tokenizer)
            path = path / "tokenizer.json" if path.is_dir() else path
            if not path.is_file():
                raise MissingInput(f"[tokens] tokenizer: no tokenizer.json at {self.limits.tokenizer}")
            from tokenizers import Tokenizer
            self._tokenizer = Tokenizer.from_file(str(path))
            self._identity = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        else:
            self._identity = "o200k"

    @functools.lru_cache(maxsize=65536)  # noqa: B019 (one Fit per run; the texts repeat across lanes)
    def count(self, text: str) -> int:
        if self._tokenizer is not None:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        from synth.llm.providers.base import bpe_count
        return bpe_count(text, "gpt-4o")

    def over(self, prompt: str | None = None, answer: str | None = None) -> str | None:
        """Why this prompt or answer does not fit (None: it fits, or no limit is set)."""
        if prompt is not None and self.limits.max_prompt and (n := self.count(prompt)) > self.limits.max_prompt:
            return f"{TOO_LONG}: prompt {n} > {self.limits.max_prompt}"
        if answer is not None and self.limits.max_answer and (n := self.count(answer)) > self.limits.max_answer:
            return f"{TOO_LONG}: answer {n} > {self.limits.max_answer}"
        return None

    @staticmethod
    def measured(reason: str) -> tuple[str, int, int] | None:
        """What an `over` reason says: ("prompt" or "answer", its tokens, the limit); None for another."""
        found = _REASON.fullmatch(reason)
        return (found[1], int(found[2]), int(found[3])) if found else None

    @property
    def fingerprint(self) -> list:
        """What a lane's output depends on (nothing when no limit is set)."""
        return [self.limits.max_prompt, self.limits.max_answer, self._identity] if self.active else []
