"""The price table: shipped as data (prices.json), overridable by a user file. A model with no
price that is not marked free is refused before any call."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from oracles.errors import InputError

SHIPPED = Path(__file__).with_name("prices.json")


class PriceMissing(InputError):
    pass


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens."""

    input: float
    output: float
    cached_input: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None
    free: bool = False

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0, batch: bool = False) -> float:
        if self.free:
            return 0.0
        rate_in = (self.batch_input if batch and self.batch_input is not None else self.input)
        rate_out = (self.batch_output if batch and self.batch_output is not None else self.output)
        rate_cached = self.cached_input if self.cached_input is not None else rate_in
        fresh = max(0, input_tokens - cached_tokens)
        return (fresh * rate_in + cached_tokens * rate_cached + output_tokens * rate_out) / 1e6


class PriceTable:
    def __init__(self, override: str | Path | None = None):
        self.models: dict[str, Price] = {}
        self._load(SHIPPED)
        override = override or os.environ.get("SYNTH_PRICES")
        if override:
            self._load(Path(override))

    def _load(self, path: Path) -> None:
        data = json.loads(Path(path).read_text())
        for name, fields in data.get("models", {}).items():
            unknown = set(fields) - {"input", "output", "cached_input", "batch_input", "batch_output", "free"}
            if unknown:
                raise ValueError(f"{path}: model {name}: unknown price fields {sorted(unknown)}")
            if fields.get("free"):
                self.models[name] = Price(0.0, 0.0, free=True)
            else:
                self.models[name] = Price(**fields)

    def price(self, model: str, free: bool = False) -> Price:
        if free:
            return Price(0.0, 0.0, free=True)
        if model not in self.models:
            raise PriceMissing(
                f"no price for model `{model}`: add it to a prices file "
                f'({{"models": {{"{model}": {{"input": USD_PER_1M, "output": USD_PER_1M}}}}}}) and point '
                f"SYNTH_PRICES at it, or mark the model `free = true` if it is a local server")
        return self.models[model]
