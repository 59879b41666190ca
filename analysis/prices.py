"""Dollars in the tables: a run's price is its manifest's (``price``: dollars per million prompt and completion
tokens, critique.llm.price), so what its calls cost is their tokens at that price, the sum of their ``cost_usd``.
A run without a price (none known, or a log older than prices) has no dollars: the tables show '-'. Runs pooled
into one cell count only when they all have the same price."""

from __future__ import annotations

import json

from critique.analysis import logs

PER_MILLION = 1_000_000


def of_run(path) -> dict | None:
    """The run directory's price ({input_per_million, output_per_million, source}), or None."""
    try:
        price = logs.manifest(path).get("price")
    except (OSError, ValueError):
        return None
    return price if isinstance(price, dict) and _numbers(price) else None


def shared(prices: list[dict | None]) -> dict | None:
    """The one price of runs pooled together, or None when one lacks a price or two differ."""
    distinct = {json.dumps(p, sort_keys=True) for p in prices}
    return prices[0] if prices and len(distinct) == 1 and prices[0] is not None else None


def dollars(price: dict | None, prompt_tokens, completion_tokens) -> float | None:
    """Dollars of that many prompt and completion tokens at ``price``; None without a price or a count."""
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * price["input_per_million"] + completion_tokens * price["output_per_million"]) \
        / PER_MILLION


def _numbers(price: dict) -> bool:
    return all(isinstance(price.get(k), (int, float)) for k in ("input_per_million", "output_per_million"))
