"""A run's records checked against each other and against its manifest, as they are read (analysis.read):
a repeated call line is counted once, and a run whose calls name another model than its manifest, or that
answers more test items than its dataset has, is left out, each said in one line."""

from __future__ import annotations

from collections import Counter

from critique.base import rundir, vocab


def once_each(path: str, calls: list, problems: list[str]) -> list:
    """The answered call rows with each request once: a second answered record of a request is a repeated
    line (the run never asks a logged request again), counted once and said."""
    seen, kept = set(), []
    for row in calls:
        key = row[6]  # request_hash (CALL_FIELDS)
        if key is not None and key in seen:
            continue
        seen.add(key)
        kept.append(row)
    if len(kept) < len(calls):
        problems.append(f"{path}: {len(calls) - len(kept)} call records repeat an answered request of the run "
                        f"({rundir.CALLS}); each request counted once")
    return kept


def contradiction(path: str, predictions: dict, calls: list, model: str | None, n_test: int | None) -> str | None:
    """Why the records of a run contradict its manifest (another model in its calls, more test items answered
    than its dataset has), or None."""
    others = sorted({str(row[7]) for row in calls if row[7] is not None and row[7] != model})
    if model is not None and others:
        return (f"{path}: its manifest names the model {model!r} but its calls were made by {', '.join(others)}; "
                "left out (was the manifest edited?)")
    answered = Counter(strategy for stage, strategy, _, _ in predictions if stage == vocab.TEST)
    over = sorted((s for s, n in answered.items() if n_test and n > n_test), key=str)  # 0: unknown (a fit's)
    if over:
        return (f"{path}: {over[0]} answers {answered[over[0]]} test items but its dataset has {n_test} "
                "(manifest dataset.n_test); left out (predictions for items not in the dataset?)")
    return None
