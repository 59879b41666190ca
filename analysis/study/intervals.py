"""The 95% interval of one accuracy cell (Table 1): over its predictions, or over its users.

A cell of one user (the data has none, or one) gets the Wilson score interval of its right answers
among its predictions. A cell of several users (preference data) is a mean of per-user accuracies,
and a user's items are not independent of each other: it gets a percentile cluster bootstrap over
users (users drawn with replacement, each with all of its predictions; RESAMPLES resamples, seeded).
Both in percent, as the accuracy.
"""

from __future__ import annotations

import functools
import math
import random
from operator import itemgetter

from critique.analysis.stats import core as stats

RESAMPLES = 2000
SEED = 0
WILSON = "wilson"
CLUSTER = "cluster bootstrap over users"
NOTE = (f"ci_low, ci_high: 95% interval of the accuracy: the Wilson score interval over the cell's predictions, or, "
        f"where the cell has several users (preference data), a percentile cluster bootstrap over users "
        f"({RESAMPLES} resamples, seed {SEED}; ci_method in JSON)")


def wilson(successes: int, n: int) -> tuple[float | None, float | None]:
    """The Wilson score interval (%) of ``successes`` of ``n`` at 95% (critique.analysis.stats.core.wilson, in
    percent); (None, None) when n is 0."""
    low, high = stats.wilson(successes, n)
    return (None, None) if low is None else (100.0 * low, 100.0 * high)


def cluster_bootstrap(rates: list[float], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The 2.5% and 97.5% percentiles of the mean of ``rates`` (one per user) over seeded resamples of users."""
    n = len(rates)
    means = sorted([math.fsum(users(rates)) / n for users in _draws(n, resamples, seed)])
    return _percentile(means, 0.025), _percentile(means, 0.975)


@functools.lru_cache(maxsize=None)
def _draws(n: int, resamples: int, seed: int) -> tuple:
    """The users of each resample of ``n`` users, as a getter of their rates: what random.Random(seed).choices
    draws from a list of ``n``, ``resamples`` times in turn. The draws depend on ``n`` alone, not on the rates, so
    every cell of ``n`` users resamples the same users, drawn once."""
    draw = random.Random(seed)
    if n == 1:  # one user, drawn every time (a getter of one index gives the rate, not a tuple of it)
        return (itemgetter(slice(0, 1)),) * resamples
    return tuple(itemgetter(*draw.choices(range(n), k=n)) for _ in range(resamples))


def _percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def accuracy_interval(users: list[tuple[int, int]]) -> dict:
    """ci_low, ci_high (%) and ci_method of a cell from (right answers, predictions) per user."""
    users = [(right, n) for right, n in users if n]
    if len(users) > 1:
        low, high = cluster_bootstrap([100.0 * right / n for right, n in users])
        return {"ci_low": low, "ci_high": high, "ci_method": CLUSTER}
    low, high = wilson(*users[0]) if users else (None, None)
    return {"ci_low": low, "ci_high": high, "ci_method": WILSON if users else None}
