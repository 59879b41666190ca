"""Gate thresholds chosen on the train split alone.

A gate (``--gate T``) injects only the retrieved entries whose similarity to the question is at least T. A
threshold read off the test questions (their similarity to their nearest entry) would be a setting chosen on the
test split, even without a label. Here each threshold is a quantile of a train-only statistic: for every train
question, its cosine similarity to the nearest *other* train question of its pool (per user for preference data),
the similarity it would have to its nearest entry if it were asked (leave one out). Memory is the train split, so
this is the distribution a test question's nearest-entry similarity is meant to resemble, read without the test
split. ``critique ablate gate --quantiles Q1,Q2 [--propose]`` uses it; a gate run made so records in its manifest's
``ablation.chosen`` which quantile of how many train questions gave its threshold.
"""

from __future__ import annotations

import numpy as np

from critique.engine.memory.episodic import pool_of

STATISTIC = "leave-one-out similarity of each train question to the nearest other train question of its pool"
DIGITS = 3  # a threshold is rounded to this many decimals (its run directory is named by it)


def nearest_other(train: list, encoder) -> list[float]:
    """For each train item (in order), the cosine similarity of its question to the nearest other train question
    of its pool; a pool of one question has none (left out)."""
    pools: dict[str, list[int]] = {}
    for n, item in enumerate(train):
        pools.setdefault(pool_of(item.user), []).append(n)
    vectors = np.asarray(encoder.encode([item.question for item in train]), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    found = []
    for rows in pools.values():
        if len(rows) < 2:
            continue
        similarity = vectors[rows] @ vectors[rows].T
        np.fill_diagonal(similarity, -np.inf)
        found.extend(similarity.max(axis=1).tolist())
    return found


def check_quantiles(quantiles: list[float]) -> list[float]:
    """The quantiles, each in (0, 1); ValueError naming one that is not."""
    for q in quantiles:
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q < 1:
            raise ValueError(f"ablation gate: quantiles must be numbers in (0, 1), not {q!r}")
    return [float(q) for q in quantiles]


def choose(train: list, encoder, quantiles: list[float]) -> list[dict]:
    """One threshold per quantile of ``nearest_other`` over ``train``: {value, chosen}; ``chosen`` says how (it
    goes into the run's manifest as ``ablation.chosen``)."""
    similarities = nearest_other(train, encoder)
    if not similarities:
        raise ValueError("ablation gate: no pool of the train split holds two questions; no threshold can be "
                         "chosen from train (give --values)")
    out = []
    for q in check_quantiles(quantiles):
        value = round(float(np.quantile(similarities, q)), DIGITS)
        out.append({"value": value, "chosen": {"split": "train", "quantile": q, "questions": len(similarities),
                                               "statistic": STATISTIC}})
    return out


def describe(choices: list[dict]) -> str:
    """The thresholds as a user reads them before a sweep."""
    lines = [f"gate thresholds from the train split ({choices[0]['chosen']['questions']} questions; "
             f"{STATISTIC}):"]
    lines += [f"  quantile {c['chosen']['quantile']:g}: {c['value']:g}" for c in choices]
    return "\n".join(lines)
