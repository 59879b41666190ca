"""Dollars in the tables: a run's price is its manifest's (``price``: critique.base.price.Price), so what its calls
cost is their tokens at that price, the sum of their ``cost_usd``. A run without a price (none known, or a log
older than prices) has no dollars: the tables show '-'. Runs pooled into one cell count only when they all have
the same price."""

from __future__ import annotations

from critique.analysis.reading import logs
from critique.base.price import Price


def of_run(path) -> Price | None:
    """The run directory's price, or None."""
    try:
        return Price.from_json(logs.manifest(path).get("price"))
    except (OSError, ValueError):
        return None


def shared(prices: list[Price | None]) -> Price | None:
    """The one price of runs pooled together, or None when one lacks a price or two differ."""
    return prices[0] if prices and None not in prices and len(set(prices)) == 1 else None


def dollars(price: Price | None, prompt_tokens, completion_tokens) -> float | None:
    """Dollars of that many prompt and completion tokens at ``price``; None without a price or a count."""
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return price.cost(prompt_tokens, completion_tokens)
