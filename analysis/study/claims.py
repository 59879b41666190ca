"""Table 2 and the headline claims C1-C4 (docs/method.md section 5), one set per experiment.

A critic condition (gold, noisy:R, self), a prompt set, or any other setting in which the plain
runs of a model and dataset differ makes its own experiment (analysis.study.points.studies): Table 2 has
one block of rows per condition, and the claims are computed for each. The first condition (the
default settings: with --critic gold, the paper's) keeps the claims' names C1-C4; another's claims
are named with it, e.g. "C1 [critic=self]". Every skip names the condition it is about.
"""

from __future__ import annotations

from critique.analysis.study.cells import Cells, mean
from critique.analysis.study.points import Study, conditions, gains, studies
from critique.analysis.stats.core import paired_summary, spearman
from critique.analysis.study.tabular import TITLES, Table, skip
from critique.base import vocab

COLUMNS = ["critique", "baseline", "n", "mean", "sd", "ci_low", "ci_high", "wins", "losses", "ties", "p_sign"]
NO_PAIR = "no (model, dataset) point has both a critique strategy and a baseline"
BASELINE_NAMES = ((vocab.ZERO_SHOT, "zero_shot"), (vocab.EP_LABEL, "ep_label"))


def table2_rows(study: Study) -> list[dict]:
    rows = []
    for critique in vocab.CRITIQUE_STRATEGIES:
        for baseline in vocab.BASELINES:
            diff = gains(study.points, critique, baseline)
            if diff:
                rows.append({"condition": study.condition, "critique": critique, "baseline": baseline,
                             **paired_summary(list(diff.values()))})
    return rows


def _skipped(study: Study) -> str:
    """Why a study has no row: no pair, and what was left out of its points."""
    return "; ".join([study.named(NO_PAIR), *study.notes])


def table2(cells: Cells) -> Table:
    found = studies(cells)
    per_study = [(study, table2_rows(study)) for study in found]
    rows = [row for _, mine in per_study for row in mine]
    if not rows:
        return skip("table2", "; ".join(_skipped(study) for study in found) if found else NO_PAIR)
    named = any(study.condition for study in found)
    columns = (["condition"] if named else []) + COLUMNS
    notes = ["n: (model, dataset) points; 95% t-interval; p_sign: exact two-sided sign test, ties excluded"]
    if named:
        notes.append("condition: the settings in which the experiments read differ; each condition is its own "
                     f"experiment, never pooled with another (first: {found[0].condition}, "
                     + ("the default settings" if found[0].default else "the one with most points, since none ran "
                                                                          "the default settings") + ")")
    for study, mine in per_study:
        notes += study.notes if mine else [_skipped(study)]
    return Table("table2", TITLES["table2"], columns, [{c: r[c] for c in columns} for r in rows],
                 note="; ".join(notes))


def claim_c1_c2(study: Study) -> tuple[dict | None, dict | None]:
    summaries = {b: paired_summary(list(gains(study.points, vocab.BEST, b).values())) for b in vocab.BASELINES}
    if not any(s["n"] for s in summaries.values()):
        return None, None
    c1, c2 = {}, {}
    for baseline, suffix in BASELINE_NAMES:
        s = summaries[baseline]
        c1[f"vs_{suffix}"], c1[f"points_vs_{suffix}"] = s["mean"], s["n"]
        for key in ("wins", "losses", "ties"):
            c2[f"{key}_vs_{suffix}"] = s[key]
        c2[f"p_vs_{suffix}"] = s["p_sign"]
    return c1, c2


def claim_c3(table: Table, mine) -> dict | None:
    """Over the Table 3 rows of the study's points (`mine`: (model, dataset) -> bool)."""
    rows = [r for r in table.rows if mine((r["model"], r["dataset"]))]
    found = [r["reduction_pct"] for r in rows if r.get("reduction_pct") is not None]
    if not found:
        return None
    return {"mean_token_reduction_pct": mean(found), "cells": len(found), "models": sorted({r["model"] for r in rows})}


def claim_c4(study: Study, suggestible: list[dict]) -> dict | None:
    """Spearman between suggestibility (`suggestible`: tables.suggestibility's rows) and the EP+SEM_CRIT
    gain over the study's points; the attribution "" (none) when it was probed, else the first."""
    rows = [r for r in suggestible if r["suggestibility"] is not None]
    if not rows:
        return None
    labels = [r["attribution"] if isinstance(r["attribution"], str) else "" for r in rows]
    primary = "" if "" in labels else sorted(set(labels))[0]
    chosen = {(r["model"], r["dataset"]): r["suggestibility"] for r, label in zip(rows, labels) if label == primary}
    out = {"attribution": primary or None}
    for baseline, suffix in BASELINE_NAMES:
        gain = gains(study.points, vocab.BEST, baseline)
        both = [(s, gain[p]) for p, s in chosen.items() if p in gain]
        result = spearman([s for s, _ in both], [g for _, g in both])
        out[f"spearman_vs_{suffix}"], out[f"p_vs_{suffix}"] = result["rho"], result["p"]
        out[f"points_vs_{suffix}"] = result["n"]
    if out["spearman_vs_zero_shot"] is None and out["spearman_vs_ep_label"] is None:
        return None
    return out


def _c4_has(study: Study, suggestible: list[dict]) -> str:
    """How many of the points C4 needs the study has: "; 1 has both"."""
    probed = {(r["model"], r["dataset"]) for r in suggestible if r["suggestibility"] is not None}
    gained = {p for baseline, _ in BASELINE_NAMES for p in gains(study.points, vocab.BEST, baseline)}
    both = len(probed & gained)
    return f"; {both} {'has' if both == 1 else 'have'} both"


WHY = {
    "C1": f"no (model, dataset) point with {vocab.BEST} and a baseline",
    "C2": f"no (model, dataset) point with {vocab.BEST} and a baseline",
    "C3": "no reasoning-model tokens per question of EP_LABEL and a critique strategy",
    "C4": f"needs at least 3 (model, dataset) points with suggestibility and the {vocab.BEST} gain "
          "(and neither constant)",
}


def claims(cells: Cells, table3_: Table, suggestible: list[dict]) -> tuple[dict, dict]:
    """(claim -> numbers, claim -> why it was skipped) for every study: the first's named C1-C4, each
    other's "C1 [condition]"; a claim's numbers carry its `condition` (None with one experiment)."""
    found, why = {}, {}
    condition = conditions(cells.labels or {})
    for i, study in enumerate(studies(cells)):
        c1, c2 = claim_c1_c2(study)
        in_study = [r for r in suggestible if (r["model"], r["dataset"]) in study.points]
        mine = {"C1": c1, "C2": c2, "C3": claim_c3(table3_, lambda p: condition.get(p, "") == study.condition),
                "C4": claim_c4(study, in_study)}
        for claim, numbers in mine.items():
            name = claim if i == 0 else f"{claim} [{study.condition}]"
            if numbers is None:
                why[name] = study.named(WHY[claim] + (_c4_has(study, in_study) if claim == "C4" else ""))
            else:
                found[name] = {**numbers, "condition": study.condition or None}
    for claim in WHY:
        if claim not in found and claim not in why:  # nothing read: no study
            why[claim] = WHY[claim]
    return {k: found.get(k) for k in [*WHY, *sorted(k for k in {**found, **why} if k not in WHY)]}, why
