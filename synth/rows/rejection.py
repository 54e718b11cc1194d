"""Why something was not kept: one type for every refusal a lane or the assembly makes.

`kind` names the check that refused it, a short fixed phrase the funnels, the snapshot manifest and
the card count by (nothing recovers it from the text); `reason` says it in full, as a person reads
it; `about` is what was refused (declaration, operator, task, tool, row id...) and what shows why
(the broken code, the diagnostics, the reply). Written as one JSON object a line in
`rejected/<lane>.jsonl` and a snapshot's `rejected/assemble.jsonl`: `about`'s keys, then `kind` and `reason`."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

_OWN = ("kind", "reason")


@dataclass(frozen=True)
class Rejection:
    kind: str
    reason: str
    about: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {**self.about, "kind": self.kind, "reason": self.reason}

    @classmethod
    def from_json(cls, data: dict) -> Rejection:
        return cls(data["kind"], data["reason"], {k: v for k, v in data.items() if k not in _OWN})

    def with_lang(self, lang: str | None) -> Rejection:
        """The same refusal, saying which language's item it was (first, as the run writes it)."""
        return replace(self, about={"lang": lang, **self.about}) if lang else self
