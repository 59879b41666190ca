"""Credit that is learned (docs/memory.md section 3; the memory papers' Hindsight Memory-PRM): a cheap estimate of
each entry's deletion credit from what the logs hold without a deletion call, fitted on the credit deletion
measured (analysis.memory.credit) and judged on entries it was not fitted on. Reads logs only.

Per entry shown in at least one evaluated prompt of a credit run (one never shown has credit 0 by definition),
the features (FEATURES): how often it was retrieved, its mean rank there (0: the nearest), its mean similarity to
those questions (when the prompts logged it), how often the answer cited it (--cite), the verdict it stores
(critique.base.truth.stored_verdict), whether its initial answer was right, its age (its place in the memory, or
the stream step that wrote it, scaled to [0, 1]) and its version (a stream note's; 1 otherwise). A missing value
is the fitted half's mean. The entries are split in two by a hash of their id (SPLIT_SEED): a ridge regression on
the standardised features is fitted on one half and judged on the other:

- rank correlation (Spearman) of the estimate with the measured credit, and the mean absolute error;
- calibration: the held-out entries in BINS bins by estimate, each bin's mean estimate beside its mean credit;
- pruning at one budget: removing the N held-out entries with the lowest estimate, against removing the N with
  the lowest measured credit and N at random (the mean over RANDOM_DRAWS seeded draws), each as the measured
  credit removed (negative: harm taken out of memory); N is the number of held-out entries whose credit is
  negative (at least 1). The accuracy such pruning gives needs answers asked again: `critique credit --prune
  estimate:N,lowest:N` ranks every shown entry by its estimate fitted on the other half (``cross_fitted``).
- for a stream's notes, the credit propagated along the version chain (a revision inherits PROPAGATION of its
  parent's propagated credit), and the estimate's rank correlation with it beside the per-version one.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from critique.analysis.memory.arms import mean
from critique.base.truth import initial_right, stored_verdict

FEATURES = ("retrieved", "mean_rank", "similarity", "cited", "verdict", "initial_right", "age", "version")
SPLIT_SEED = 0
RIDGE = 1.0
BINS = 4
RANDOM_DRAWS = 20
PROPAGATION = 0.5


def held_out(entry_id: str) -> bool:
    """Whether an entry is judged (True) or fitted on (False): a hash of its id, so the split never looks at
    credit."""
    return int(hashlib.sha256(f"{SPLIT_SEED}:{entry_id}".encode()).hexdigest(), 16) % 2 == 1


def _version(entry_id: str) -> int:
    tail = entry_id.rsplit("@", 1)[-1] if "@" in entry_id else ""
    return int(tail) if tail.isdigit() else 1


def _bit(value) -> float | None:
    return None if value is None else float(bool(value))


def features(entries: list[dict], credit_rows: list[dict], full: list[dict]) -> list[dict]:
    """One row per entry shown in a full prompt: its FEATURES and its measured ``credit`` (net D)."""
    ranks: dict[str, list[int]] = {}
    scores: dict[str, list[float]] = {}
    cited: dict[str, int] = {}
    for p in full:
        found, shown = p.get("retrieved") or [], p.get("retrieved_scores")
        for rank, entry_id in enumerate(found):
            ranks.setdefault(entry_id, []).append(rank)
            if shown is not None and rank < len(shown):
                scores.setdefault(entry_id, []).append(shown[rank])
        for entry_id in p.get("cited") or []:
            cited[entry_id] = cited.get(entry_id, 0) + 1
    measured = {r["id"]: r["credit"] for r in credit_rows}
    steps = [e.get("step") for e in entries if isinstance(e.get("step"), int)]
    last = max(steps or [len(entries) - 1, 1])
    rows = []
    for order, entry in enumerate(entries):
        entry_id = entry["id"]
        if entry_id not in ranks:
            continue
        age = entry.get("step") if isinstance(entry.get("step"), int) else order
        rows.append({"id": entry_id, "credit": measured.get(entry_id, 0), "retrieved": float(len(ranks[entry_id])),
                     "mean_rank": mean(ranks[entry_id]), "similarity": mean(scores.get(entry_id, [])),
                     "cited": float(cited.get(entry_id, 0)),
                     "verdict": _bit(stored_verdict(entry, entry.get("asserted"))),
                     "initial_right": _bit(initial_right(entry)), "age": age / last if last else 0.0,
                     "version": float(_version(entry_id))})
    return rows


def fit(rows: list[dict]):
    """The ridge regression of credit on the standardised FEATURES of ``rows``: (the features used, their means,
    their SDs, the coefficients with the intercept first); a feature constant over ``rows`` is left out."""
    import numpy as np

    means = {f: mean([r[f] for r in rows]) for f in FEATURES}
    used = [f for f in FEATURES if means[f] is not None]
    matrix = np.array([[r[f] if r[f] is not None else means[f] for f in used] for r in rows], dtype=float)
    sds = matrix.std(axis=0)
    keep = sds > 0
    used = [f for f, k in zip(used, keep) if k]
    matrix = (matrix[:, keep] - matrix[:, keep].mean(axis=0)) / sds[keep]
    x = np.hstack([np.ones((len(rows), 1)), matrix])
    y = np.array([r["credit"] for r in rows], dtype=float)
    penalty = RIDGE * np.eye(x.shape[1])
    penalty[0, 0] = 0.0  # the intercept is not shrunk
    coefficients = np.linalg.solve(x.T @ x + penalty, x.T @ y)
    return used, {f: means[f] for f in used}, dict(zip(used, sds[keep])), coefficients


def estimate(model, rows: list[dict]) -> list[float]:
    used, means, sds, coefficients = model
    out = []
    for r in rows:
        z = [((r[f] if r[f] is not None else means[f]) - means[f]) / sds[f] for f in used]
        out.append(float(coefficients[0] + sum(c * v for c, v in zip(coefficients[1:], z))))
    return out


def calibration(estimates: list[float], measured: list[float]) -> list[dict]:
    """The entries in BINS bins of about equal size by estimate: each bin's n, mean estimate, mean credit."""
    order = sorted(range(len(estimates)), key=lambda i: estimates[i])
    bins = []
    for b in range(BINS):
        part = order[b * len(order) // BINS:(b + 1) * len(order) // BINS]
        if part:
            bins.append({"bin": b + 1, "n": len(part), "estimate": mean([estimates[i] for i in part]),
                         "credit": mean([measured[i] for i in part])})
    return bins


def pruning(estimates: list[float], measured: list[float]) -> dict:
    """The measured credit removed by pruning the N lowest by estimate, the N lowest by measured credit and N at
    random (mean over RANDOM_DRAWS seeded draws); N: the entries of negative credit, at least 1."""
    budget = max(1, sum(c < 0 for c in measured))
    lowest = sorted(range(len(measured)), key=lambda i: (estimates[i], i))[:budget]
    oracle = sorted(measured)[:budget]
    draws = [sum(random.Random(seed).sample(measured, budget)) for seed in range(RANDOM_DRAWS)]
    return {"budget": budget, "by_estimate": sum(measured[i] for i in lowest), "by_credit": sum(oracle),
            "at_random": sum(draws) / len(draws)}


def propagated(versions: list[dict], credit: dict[str, float]) -> dict[str, float]:
    """Each note version's credit plus PROPAGATION times its parent's propagated credit (versions in the order
    written: a parent comes before its revision); ``credit`` by version id NOTE@VERSION."""
    out: dict[str, float] = {}
    for v in versions:
        own = f"{v['note']}@{v['version']}"
        parent = v.get("replaces")
        out[own] = credit.get(own, 0.0) + (PROPAGATION * out.get(parent, 0.0) if parent else 0.0)
    return out


def _rows(credit_dir: Path) -> tuple[dict, dict, list[dict]]:
    """(the credit run's measured-credit summary, its records, the FEATURES row of each entry it showed)."""
    from critique.analysis.memory import credit as measured_credit
    from critique.base.vocab import CREDIT_FULL

    s = measured_credit.summary(credit_dir)
    data = measured_credit.read(credit_dir)
    full = [p for p in data["predictions"] if p["strategy"] == CREDIT_FULL and not p.get("error")]
    return s, data, features(data["entries"], s["rows"], full)


def cross_fitted(credit_dir: Path) -> dict[str, float]:
    """Each shown entry's estimate by the model fitted on the other half of the entries (the halves of
    ``held_out``), so no estimate has seen its own entry's credit; {} when a half has fewer than 4 entries. What
    `critique credit --prune estimate:N` ranks by (an entry never shown is left out: its credit is 0 by
    definition)."""
    rows = _rows(credit_dir)[2]
    halves = [[r for r in rows if held_out(r["id"]) == side] for side in (False, True)]
    if min(len(h) for h in halves) < 4:
        return {}
    out: dict[str, float] = {}
    for mine, other in ((halves[0], halves[1]), (halves[1], halves[0])):
        out.update(zip((r["id"] for r in mine), estimate(fit(other), mine)))
    return out


def summary(credit_dir: Path) -> dict | None:
    """The learned estimate of one credit run, judged on its held-out entries (None: too few entries to fit and
    judge: fewer than 4 on a side)."""
    from critique.analysis.reading import logs
    from critique.analysis.stats.core import spearman

    s, data, rows = _rows(credit_dir)
    fitted = [r for r in rows if not held_out(r["id"])]
    judged = [r for r in rows if held_out(r["id"])]
    if len(fitted) < 4 or len(judged) < 4:
        return None
    guess = estimate(fit(fitted), judged)
    credit = [float(r["credit"]) for r in judged]
    out = {"credit_run": str(credit_dir), "probe": s["probe"], "fitted": len(fitted), "judged": len(judged),
           "spearman": spearman(guess, credit), "mae": mean([abs(g - c) for g, c in zip(guess, credit)]),
           "calibration": calibration(guess, credit), "pruning": pruning(guess, credit), "propagated": None}
    versions = logs.records(Path(data["source"]), logs.NOTES) if "@" in (rows[0]["id"] if rows else "") else []
    if any(v.get("replaces") for v in versions):
        chain = propagated(versions, {r["id"]: float(r["credit"]) for r in rows})
        out["propagated"] = spearman(guess, [chain.get(r["id"], 0.0) for r in judged])
    return out


KEY, CALIBRATION_KEY = "credit_learned", "credit_learned_calibration"
TITLE = "Credit that is learned: an estimate from the logs, fitted on deletion credit, judged on held-out entries"
CALIBRATION_TITLE = "Credit that is learned: calibration on the held-out entries"
COLUMNS = ["model", "dataset", "critic", "strategy", "on", "fitted", "judged", "rho", "p", "rho_propagated", "mae",
           "budget", "removed_by_estimate", "removed_by_credit", "removed_at_random"]
CALIBRATION_COLUMNS = ["model", "dataset", "critic", "strategy", "on", "bin", "n", "estimate", "credit"]
NOTE = ("per credit run: a ridge regression of each shown entry's deletion credit (net D) on what the logs hold "
        "without a deletion call (" + ", ".join(FEATURES) + "), fitted on half the entries (by a hash of the id) "
        "and judged on the other half: rho, p (Spearman) and mae against the measured credit; rho_propagated: "
        "against the credit propagated along a stream note's version chain (a revision inherits "
        f"{PROPAGATION:g} of its parent's); removed_by_*: the measured credit removed by pruning budget entries "
        "(those of negative credit, at least 1) with the lowest estimate, the lowest measured credit, or at random "
        f"(mean of {RANDOM_DRAWS} draws): negative takes harm out; rho - when the credit is constant")


def tables(metas: list[dict], problems: list[str]) -> list:
    """The learned-credit table and its calibration of the credit runs among the runs read (`critique tables`)."""
    from critique.analysis.memory.echo import run_label
    from critique.analysis.study.tabular import Table
    from critique.base.vocab import CREDIT

    rows, bins = [], []
    for meta in [m for m in metas if m.get("probe") == CREDIT]:
        try:
            s = summary(Path(meta["path"]))
        except (OSError, ValueError) as exc:
            problems.append(f"{meta['path']}: no learned credit ({exc})")
            continue
        if s is None:
            problems.append(f"{meta['path']}: no learned credit (fewer than 4 shown entries to fit or to judge)")
            continue
        label = {**run_label(meta), "strategy": s["probe"].get("strategy"), "on": s["probe"].get("on")}
        prune = s["pruning"]
        rows.append({**label, "fitted": s["fitted"], "judged": s["judged"], "rho": s["spearman"]["rho"],
                     "p": s["spearman"]["p"], "rho_propagated": (s["propagated"] or {}).get("rho"), "mae": s["mae"],
                     "budget": prune["budget"], "removed_by_estimate": prune["by_estimate"],
                     "removed_by_credit": prune["by_credit"], "removed_at_random": prune["at_random"]})
        bins.extend({**label, **b} for b in s["calibration"])
    if not rows:
        return [Table(KEY, TITLE, skipped="no credit run with enough shown entries among the inputs")]
    return [Table(KEY, TITLE, COLUMNS, rows, note=NOTE), Table(CALIBRATION_KEY, CALIBRATION_TITLE,
                                                               CALIBRATION_COLUMNS, bins)]
