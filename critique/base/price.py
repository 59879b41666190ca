"""What tokens cost, in dollars: a price per million prompt and per million completion tokens, and the one
formula that turns tokens into dollars. The LLM client finds a model's price (critique.llm.price: litellm's price
table, ``--price IN,OUT``, or the embedded model's $0) and records it in the manifest; the analysis reads it back
from there (critique.analysis.reading.prices)."""

from __future__ import annotations

import math
from dataclasses import dataclass

PER_MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    input: float  # dollars per million prompt tokens
    output: float  # dollars per million completion tokens
    source: str  # where the price comes from: "--price", "litellm", "embedded"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollars of that many prompt and completion tokens."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / PER_MILLION

    def to_json(self) -> dict:
        """As the manifest's ``price`` holds it."""
        return {"input_per_million": self.input, "output_per_million": self.output, "source": self.source}

    @classmethod
    def from_json(cls, record) -> "Price | None":
        """The price a manifest's ``price`` holds; None when it holds none (or not two numbers)."""
        if not isinstance(record, dict):
            return None
        values = record.get("input_per_million"), record.get("output_per_million")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return None
        return cls(float(values[0]), float(values[1]), str(record.get("source") or ""))

    def shown(self) -> str:
        return f"${self.input:g}/${self.output:g} per million prompt/completion tokens ({self.source})"


def parse_price(text: str) -> tuple[float, float]:
    """(input, output) dollars per million tokens of ``--price IN,OUT``; ValueError saying what is wrong."""
    parts = str(text).split(",")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or not all(math.isfinite(v) and v >= 0 for v in values):
        raise ValueError(f"must be IN,OUT: dollars per million prompt and completion tokens, two numbers >= 0 "
                         f"(e.g. 0.15,0.6), not {text!r}")
    return values
