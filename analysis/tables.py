"""The study's tables and headline claims (SPEC section 5), each built from `Cells`.

Every table function returns a `Table`: long rows for machine use, an optional wide
view for reading, or `skipped` with one line saying why the inputs cannot fill it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import vocab
from analysis.cells import COST_STAGES, Cells
from analysis.stats import paired_summary, spearman

TITLES = {
    "table1": "Table 1. Accuracy (%) per model x dataset x strategy",
    "table2": "Table 2. Gain (points) of each critique strategy over each baseline, pooled over (model, dataset)",
    "table3": "Table 3. Output tokens per test question (reasoning included), reasoning models",
    "table4": "Table 4. Suggestibility: accuracy (%) with a truthful / a lying critique, S = truth - lying",
    "table5_costs": "Table 5a. Offline cost: completion tokens of the training stage",
    "table5": "Table 5b. Break-even number of test queries versus EP_LABEL (reasoning models)",
    "table6": "Table 6. Train-size ablation: accuracy (%)",
    "table7": "Table 7. Critique-parts ablation: accuracy (%)",
    "table8": "Table 8. K ablation: accuracy (%)",
    "table9": "Table 9. Timeout rate (%) per model x dataset x strategy (train_predict: the train stage)",
    "table10": "Table 10. Per-user accuracy (%), preference datasets",
    "table11": "Table 11. Accuracy (%) over users, preference datasets: mean and SD",
    "comparison": "Comparison of Table 1 with the published numbers (points)",
    "claims_comparison": "Headline claims: logs versus published numbers",
}
ABLATION_LABELS = {"train_size": "train", "parts": "parts", "k": "K"}


@dataclass
class Table:
    key: str
    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    skipped: str | None = None
    view_columns: list[str] | None = None  # a wide view for markdown and HTML; rows/columns otherwise
    view_rows: list[dict] | None = None
    note: str = ""


@dataclass
class Result:
    source: str
    tables: list[Table]
    claims: dict  # claim -> dict of numbers, or None
    claim_skips: dict  # claim -> why it is None

    def table(self, key: str) -> Table:
        return next(t for t in self.tables if t.key == key)


def plain_value(value):
    """A JSON-ready scalar: numpy -> Python, NaN -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(frame: pd.DataFrame, columns: list[str]) -> list[dict]:
    return [{c: plain_value(v) for c, v in zip(columns, row)} for row in frame[columns].itertuples(index=False)]


def strategy_order(names) -> list[str]:
    names = list(dict.fromkeys(names))
    known = [s for s in (vocab.TRAIN, *vocab.STRATEGIES) if s in names]
    return known + sorted(n for n in names if n not in known)


def sort_strategies(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(strategy_order(frame["strategy"]))}
    return frame.assign(_order=frame["strategy"].map(order)).sort_values(keys + ["_order"]).drop(columns="_order")


def wide_view(frame: pd.DataFrame, index: list[str], column: str, value: str, order: list,
              labels: dict | None = None) -> tuple[list[str], list[dict]]:
    """One row per `index`, one column per value of `column` (in `order`)."""
    labels = labels or {}
    table = frame.set_index(index + [column])[value].unstack(column)
    seen = frame[index].drop_duplicates()  # rows in the frame's order (strategies in study order)
    table = table.reindex(pd.MultiIndex.from_frame(seen) if len(index) > 1 else pd.Index(seen[index[0]]))
    present = [o for o in order if o in table.columns]
    columns = index + [labels.get(o, str(o)) for o in present]
    rows = []
    for key, values in zip(table.index, table[present].itertuples(index=False)):
        key = key if isinstance(key, tuple) else (key,)
        rows.append(dict(zip(columns, [*key, *(plain_value(v) for v in values)])))
    return columns, rows


def skip(key: str, why: str) -> Table:
    return Table(key, TITLES[key], skipped=why)


def table1(cells: Cells) -> Table:
    acc = cells.accuracy
    if acc.empty:
        return skip("table1", "no test-stage predictions of plain runs among the inputs")
    acc = sort_strategies(acc, ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "accuracy", "n"]
    view_columns, view_rows = wide_view(acc, ["model", "dataset"], "strategy", "accuracy",
                                        strategy_order(acc["strategy"]))
    return Table("table1", TITLES["table1"], columns, records(acc, columns), None, view_columns, view_rows)


def points(cells: Cells) -> pd.DataFrame:
    """Accuracy per (model, dataset) point, one column per strategy."""
    if cells.accuracy.empty:
        return pd.DataFrame()
    return cells.accuracy.set_index(["model", "dataset", "strategy"])["accuracy"].unstack("strategy")


def gains(points_: pd.DataFrame, critique: str, baseline: str) -> pd.Series:
    """Accuracy of `critique` minus accuracy of `baseline` (points), where a point has both."""
    if critique not in points_ or baseline not in points_:
        return pd.Series(dtype=float)
    return (points_[critique] - points_[baseline]).dropna()


def table2(cells: Cells) -> Table:
    columns = ["critique", "baseline", "n", "mean", "sd", "ci_low", "ci_high", "wins", "losses", "ties", "p_sign"]
    rows, wide = [], points(cells)
    for critique in vocab.CRITIQUE_STRATEGIES:
        for baseline in vocab.BASELINES:
            diff = gains(wide, critique, baseline)
            if len(diff):
                rows.append({"critique": critique, "baseline": baseline, **paired_summary(diff.to_numpy())})
    if not rows:
        return skip("table2", "no (model, dataset) point has both a critique strategy and a baseline")
    note = "n: (model, dataset) points; 95% t-interval; p_sign: exact two-sided sign test, ties excluded"
    return Table("table2", TITLES["table2"], columns, [{c: r[c] for c in columns} for r in rows], note=note)


def reasoning_tokens(cells: Cells) -> pd.DataFrame:
    tokens = cells.tokens[cells.tokens["reasoning"].eq(True)]
    return tokens.dropna(subset=["tokens_per_question"])


def table3(cells: Cells) -> Table:
    tokens = reasoning_tokens(cells)
    if tokens.empty:
        return skip("table3", "no reasoning model among the inputs (no call reports reasoning tokens, "
                              "none declared; in CSV input: no tokens_per_question)")
    ep = tokens[tokens["strategy"].eq(vocab.EP_LABEL)].set_index(["model", "dataset"])["tokens_per_question"]
    base = pd.Series([ep.get((m, d)) for m, d in zip(tokens["model"], tokens["dataset"])], index=tokens.index,
                     dtype=float)
    reduction = (base - tokens["tokens_per_question"]) / base * 100.0
    tokens = tokens.assign(reduction_pct=reduction.where(tokens["strategy"].isin(vocab.CRITIQUE_STRATEGIES)))
    tokens = sort_strategies(tokens, ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "tokens_per_question", "reduction_pct"]
    view_columns, view_rows = wide_view(tokens, ["model", "dataset"], "strategy", "tokens_per_question",
                                        strategy_order(tokens["strategy"]))
    note = "reduction_pct (JSON): relative reduction versus EP_LABEL of the same model and dataset"
    return Table("table3", TITLES["table3"], columns, records(tokens, columns), None, view_columns, view_rows, note)


def suggestibility(cells: Cells) -> pd.DataFrame:
    frame = cells.suggestibility.copy()
    frame["suggestibility"] = frame["acc_truth"].astype(float) - frame["acc_lying"].astype(float)
    frame["attribution"] = frame["attribution"].map(lambda a: a if isinstance(a, str) and a else None)
    return frame.sort_values(["model", "dataset"], kind="stable")


def table4(cells: Cells) -> Table:
    if cells.suggestibility.empty:
        return skip("table4", "no suggestibility probe among the inputs (runs with manifest.probe.name == "
                              "'suggestibility', or --suggestibility CSV)")
    columns = ["model", "dataset", "attribution", "acc_truth", "acc_lying", "suggestibility", "n"]
    return Table("table4", TITLES["table4"], columns, records(suggestibility(cells), columns))


def table5_costs(cells: Cells) -> Table:
    if cells.costs.empty:
        return skip("table5_costs", "no training-stage calls of plain runs (or no --costs CSV)")
    costs = cells.costs.assign(total=cells.costs[["init_tokens", "critique_tokens", "summary_tokens"]].sum(
        axis=1, min_count=1))
    columns = ["model", "dataset", "init_tokens", "critique_tokens", "summary_tokens", "total"]
    return Table("table5_costs", TITLES["table5_costs"], columns, records(costs, columns))


def break_even_rows(cells: Cells) -> list[dict]:
    tokens = reasoning_tokens(cells).set_index(["model", "dataset", "strategy"])["tokens_per_question"]
    tokens = tokens.unstack("strategy")
    rows = []
    for cost in cells.costs.itertuples(index=False):
        point = (cost.model, cost.dataset)
        if point not in tokens.index or vocab.EP_LABEL not in tokens:
            continue
        per_query = tokens.loc[point]
        for strategy, stages in vocab.OFFLINE_STAGES.items():
            paid = [getattr(cost, COST_STAGES[stage]) for stage in stages]
            if strategy not in per_query or any(pd.isna(v) for v in [*paid, per_query[strategy],
                                                                      per_query[vocab.EP_LABEL]]):
                continue
            offline = float(sum(paid))
            saving = float(per_query[vocab.EP_LABEL] - per_query[strategy])
            rows.append({"model": cost.model, "dataset": cost.dataset, "strategy": strategy,
                         "offline_tokens": offline, "saving_per_query": saving,
                         "break_even": offline / saving if saving > 0 else "never"})
    return rows


def table5(cells: Cells) -> Table:
    if cells.costs.empty:
        return skip("table5", "no offline costs (training-stage calls of plain runs, or --costs CSV)")
    if reasoning_tokens(cells).empty:
        return skip("table5", "no reasoning-model tokens per question (see Table 3)")
    rows = break_even_rows(cells)
    if not rows:
        return skip("table5", "no (model, dataset) has both offline costs and tokens per question of EP_LABEL "
                              "and a critique strategy")
    columns = ["model", "dataset", "strategy", "offline_tokens", "saving_per_query", "break_even"]
    note = ("break_even = offline tokens / (EP_LABEL tokens per query - strategy tokens per query); 'never' when "
            "the saving is not positive. EP_CRIT pays initial predictions + critiques; SEM_CRIT and EP+SEM_CRIT "
            "also the summary")
    return Table("table5", TITLES["table5"], columns, rows, note=note)


def _value_key(value):
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def ablation_table(cells: Cells, name: str) -> Table:
    key = vocab.ABLATIONS[name]
    frame = cells.ablations[cells.ablations["ablation"].eq(name)]
    if frame.empty:
        return skip(key, f"no ablation runs with manifest.ablation.name == {name!r} among the inputs")
    frame = sort_strategies(frame, ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "value", "accuracy", "n"]
    order = sorted(frame["value"].unique(), key=_value_key)
    labels = {v: f"{ABLATION_LABELS[name]}={v}" for v in order}
    view_columns, view_rows = wide_view(frame, ["model", "dataset", "strategy"], "value", "accuracy", order, labels)
    return Table(key, TITLES[key], columns, records(frame, columns), None, view_columns, view_rows)


def table9(cells: Cells) -> Table:
    test = cells.accuracy.dropna(subset=["timeout_rate"])
    train = cells.train.dropna(subset=["timeout_rate"]).assign(strategy=vocab.TRAIN)
    frame = pd.concat([f for f in (train, test) if not f.empty], ignore_index=True) if len(train) + len(test) else None
    if frame is None:
        return skip("table9", "no timeout information (no predictions, or results.csv without timeout_rate)")
    frame = sort_strategies(frame, ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "timeout_rate", "parse_fail_rate", "n"]
    view_columns, view_rows = wide_view(frame, ["model", "dataset"], "strategy", "timeout_rate",
                                        strategy_order(frame["strategy"]))
    note = "parse_fail_rate (JSON): answers that could not be parsed; both count as wrong in every accuracy"
    return Table("table9", TITLES["table9"], columns, records(frame, columns), None, view_columns, view_rows, note)


def per_user_view(frame: pd.DataFrame, summary: pd.DataFrame) -> tuple[list[str], list[dict]]:
    frame = frame.assign(slot=frame.groupby("dataset")["user"].rank(method="dense").astype(int))
    slots = sorted(frame["slot"].unique())
    labels = {s: f"u{s}" for s in slots}
    columns, rows = wide_view(frame, ["dataset", "model", "strategy"], "slot", "accuracy", slots, labels)
    stats = {(d, m, s): (mean, sd) for d, m, s, mean, sd in
             summary[["dataset", "model", "strategy", "mean", "sd"]].itertuples(index=False)}
    for row in rows:
        mean, sd = stats[(row["dataset"], row["model"], row["strategy"])]
        row["mean"], row["sd"] = plain_value(mean), plain_value(sd)
    return columns + ["mean", "sd"], rows


def user_summary(cells: Cells) -> pd.DataFrame:
    grouped = cells.per_user.groupby(["model", "dataset", "strategy"], sort=True)["accuracy"]
    summary = grouped.agg(users="size", mean="mean", sd="std", min="min", max="max").reset_index()
    return sort_strategies(summary, ["model", "dataset"])


def table10(cells: Cells) -> Table:
    if cells.per_user.empty:
        return skip("table10", "no preference dataset among the run directories (dataset.kind == 'preference')")
    frame = sort_strategies(cells.per_user, ["dataset", "model"])
    columns = ["model", "dataset", "strategy", "user", "accuracy", "n"]
    view_columns, view_rows = per_user_view(frame, user_summary(cells))
    note = "u1..uN: the dataset's users in sorted id order (ids in the JSON output); SD over users"
    return Table("table10", TITLES["table10"], columns, records(frame, columns), None, view_columns, view_rows, note)


def table11(cells: Cells) -> Table:
    if cells.per_user.empty:
        return skip("table11", "no preference dataset among the run directories (dataset.kind == 'preference')")
    columns = ["model", "dataset", "strategy", "users", "mean", "sd", "min", "max"]
    return Table("table11", TITLES["table11"], columns, records(user_summary(cells), columns))


def claim_c1_c2(cells: Cells) -> tuple[dict | None, dict | None]:
    wide = points(cells)
    summaries = {b: paired_summary(gains(wide, vocab.BEST, b).to_numpy()) for b in vocab.BASELINES}
    names = {vocab.ZERO_SHOT: "zero_shot", vocab.EP_LABEL: "ep_label"}
    if not any(s["n"] for s in summaries.values()):
        return None, None
    c1, c2 = {}, {}
    for baseline, s in summaries.items():
        suffix = names[baseline]
        c1[f"vs_{suffix}"], c1[f"points_vs_{suffix}"] = s["mean"], s["n"]
        for key in ("wins", "losses", "ties"):
            c2[f"{key}_vs_{suffix}"] = s[key]
        c2[f"p_vs_{suffix}"] = s["p_sign"]
    return c1, c2


def claim_c3(table: Table) -> dict | None:
    cells = [r["reduction_pct"] for r in table.rows if r.get("reduction_pct") is not None]
    if not cells:
        return None
    return {"mean_token_reduction_pct": float(np.mean(cells)), "cells": len(cells),
            "models": sorted({r["model"] for r in table.rows})}


def claim_c4(cells: Cells) -> dict | None:
    frame = suggestibility(cells).dropna(subset=["suggestibility"])
    if frame.empty:
        return None
    labels = frame["attribution"].map(lambda a: a if isinstance(a, str) else "").astype(object)
    primary = "" if labels.eq("").any() else sorted(set(labels))[0]
    frame = frame[labels.eq(primary)].set_index(["model", "dataset"])
    out, wide = {"attribution": primary or None}, points(cells)
    for baseline, suffix in ((vocab.ZERO_SHOT, "zero_shot"), (vocab.EP_LABEL, "ep_label")):
        gain = gains(wide, vocab.BEST, baseline)
        both = frame[["suggestibility"]].join(gain.rename("gain"), how="inner").dropna() if len(gain) else None
        result = spearman([], []) if both is None else spearman(both["suggestibility"], both["gain"])
        out[f"spearman_vs_{suffix}"], out[f"p_vs_{suffix}"] = result["rho"], result["p"]
        out[f"points_vs_{suffix}"] = result["n"]
    if out["spearman_vs_zero_shot"] is None and out["spearman_vs_ep_label"] is None:
        return None
    return out


def claims(cells: Cells, table3_: Table) -> tuple[dict, dict]:
    c1, c2 = claim_c1_c2(cells)
    found = {"C1": c1, "C2": c2, "C3": claim_c3(table3_), "C4": claim_c4(cells)}
    why = {
        "C1": f"no (model, dataset) point with {vocab.BEST} and a baseline",
        "C2": f"no (model, dataset) point with {vocab.BEST} and a baseline",
        "C3": "no reasoning-model tokens per question of EP_LABEL and a critique strategy",
        "C4": f"needs at least 3 (model, dataset) points with suggestibility and the {vocab.BEST} gain "
              "(and neither constant)",
    }
    return found, {k: why[k] for k, v in found.items() if v is None}


def build(cells: Cells) -> Result:
    t3 = table3(cells)
    tables = [table1(cells), table2(cells), t3, table4(cells), table5_costs(cells), table5(cells),
              *(ablation_table(cells, name) for name in vocab.ABLATIONS), table9(cells), table10(cells),
              table11(cells)]
    found, why = claims(cells, t3)
    return Result(cells.source, tables, found, why)


CLAIM_FIELDS = {
    "C1": ("vs_zero_shot", "vs_ep_label"),
    "C2": ("wins_vs_zero_shot", "p_vs_zero_shot", "wins_vs_ep_label", "p_vs_ep_label"),
    "C3": ("mean_token_reduction_pct",),
    "C4": ("spearman_vs_zero_shot", "p_vs_zero_shot", "spearman_vs_ep_label", "p_vs_ep_label"),
}


def comparison(logs: Result, published: Result) -> list[Table]:
    """Table 1 cells and claims of the logs next to the published numbers."""
    mine = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in logs.table("table1").rows}
    theirs = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in published.table("table1").rows}
    shared = [k for k in mine if k in theirs]
    columns = ["model", "dataset", "strategy", "logs", "published", "diff"]
    cells = Table("comparison", TITLES["comparison"], columns,
                  [dict(zip(columns, [*k, mine[k], theirs[k], mine[k] - theirs[k]])) for k in shared])
    if not shared:
        cells.skipped = "no (model, dataset, strategy) cell is in both the logs and the published results"
    rows = []
    for claim, fields in CLAIM_FIELDS.items():
        for name in fields:
            a, b = (r.claims.get(claim) or {} for r in (logs, published))
            if name in a or name in b:
                rows.append({"claim": claim, "quantity": name, "logs": a.get(name), "published": b.get(name)})
    claim_table = Table("claims_comparison", TITLES["claims_comparison"], ["claim", "quantity", "logs", "published"],
                        rows, None if rows else "no claim could be computed from either input")
    return [cells, claim_table]
