"""The study's tables and headline claims (SPEC section 5), each built from `Cells`.

Every table function returns a `Table`: long rows for machine use, an optional wide
view for reading, or `skipped` with one line saying why the inputs cannot fill it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from critique.base import vocab
from critique.analysis.cells import COST_STAGES, Cells, mean, name_key, value_key
from critique.analysis.points import gains, points, study_points
from critique.analysis.stats import paired_summary, spearman
from critique.analysis.tabular import (ERROR_NOTE, TITLES, Table, flagged, n_view, plain_value, records, skip,
                                       sort_strategies, strategy_order, with_errors, wide_view)

ABLATION_LABELS = {"train_size": "train", "parts": "parts", "k": "K"}


@dataclass
class Result:
    source: str
    tables: list[Table]
    claims: dict  # claim -> dict of numbers, or None
    claim_skips: dict  # claim -> why it is None

    def table(self, key: str) -> Table:
        return next(t for t in self.tables if t.key == key)


def table1(cells: Cells) -> Table:
    if not cells.accuracy:
        return skip("table1", "no test-stage predictions of plain runs among the inputs")
    acc = flagged(sort_strategies(cells.accuracy, ["model", "dataset"]))
    columns = ["model", "dataset", "strategy", "accuracy", "n", "errors", "flagged", "majority"]
    index = ["model", "dataset"]
    view_columns, view_rows = wide_view(acc, index, "strategy", "accuracy", strategy_order(r["strategy"] for r in acc))
    view_rows = with_errors(view_rows, acc, index, "strategy")
    ns, majorities = n_view(acc, index), {(r["model"], r["dataset"]): r.get("majority") for r in acc}
    extra = (["n"] if ns else []) + (["majority"] if any(v is not None for v in majorities.values()) else [])
    view_rows = [{**{k: row[k] for k in index}, "n": ns.get(tuple(row[k] for k in index)),
                  "majority": plain_value(majorities.get(tuple(row[k] for k in index))),
                  **{k: v for k, v in row.items() if k not in index}} for row in view_rows]
    view_columns = index + extra + view_columns[len(index):]
    notes = ["n: test predictions per strategy"] + ([ERROR_NOTE] if any(r["flagged"] for r in acc) else [])
    if "majority" in extra:
        notes.insert(1, "majority: always giving the most frequent gold label of the train split (of the test split "
                        "when no train prediction was read), per user for preference data")
    return Table("table1", TITLES["table1"], columns, records(acc, columns), None, view_columns, view_rows,
                 "; ".join(notes))


def table2(cells: Cells) -> Table:
    columns = ["critique", "baseline", "n", "mean", "sd", "ci_low", "ci_high", "wins", "losses", "ties", "p_sign"]
    rows, (wide, notes) = [], study_points(cells)
    for critique in vocab.CRITIQUE_STRATEGIES:
        for baseline in vocab.BASELINES:
            diff = gains(wide, critique, baseline)
            if diff:
                rows.append({"critique": critique, "baseline": baseline, **paired_summary(list(diff.values()))})
    if not rows:
        return skip("table2", "no (model, dataset) point has both a critique strategy and a baseline")
    note = "; ".join(["n: (model, dataset) points; 95% t-interval; p_sign: exact two-sided sign test, ties excluded",
                      *notes])
    return Table("table2", TITLES["table2"], columns, [{c: r[c] for c in columns} for r in rows], note=note)


def reasoning_tokens(cells: Cells) -> list[dict]:
    return [r for r in cells.tokens if r["reasoning"] is True and r["tokens_per_question"] is not None]


def _reduction(base, tokens) -> float | None:
    return (base - tokens) / base * 100.0 if base else None


def table3(cells: Cells) -> Table:
    tokens = reasoning_tokens(cells)
    if not tokens:
        return skip("table3", "no reasoning model among the inputs (no call reports reasoning tokens, "
                              "none declared; in CSV input: no tokens_per_question)")
    ep = {(r["model"], r["dataset"]): r["tokens_per_question"] for r in tokens if r["strategy"] == vocab.EP_LABEL}
    tokens = sort_strategies([{**r, "reduction_pct": _reduction(ep.get((r["model"], r["dataset"])),
                                                                r["tokens_per_question"])
                               if r["strategy"] in vocab.CRITIQUE_STRATEGIES else None} for r in tokens],
                             ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "tokens_per_question", "reduction_pct"]
    view_columns, view_rows = wide_view(tokens, ["model", "dataset"], "strategy", "tokens_per_question",
                                        strategy_order(r["strategy"] for r in tokens))
    note = "reduction_pct (JSON): relative reduction versus EP_LABEL of the same model and dataset"
    return Table("table3", TITLES["table3"], columns, records(tokens, columns), None, view_columns, view_rows, note)


def _difference(a, b) -> float | None:
    return None if a is None or b is None else float(a) - float(b)


def suggestibility(cells: Cells) -> list[dict]:
    rows = [{**r, "suggestibility": _difference(r["acc_truth"], r["acc_lying"]),
             "suggestibility_delivered": _difference(r.get("acc_truth_delivered"), r.get("acc_lying_delivered")),
             "attribution": r["attribution"] if isinstance(r["attribution"], str) and r["attribution"] else None}
            for r in cells.suggestibility]
    return sorted(rows, key=lambda r: (name_key(r["model"]), name_key(r["dataset"])))


def table4(cells: Cells) -> Table:
    if not cells.suggestibility:
        return skip("table4", "no suggestibility probe among the inputs (runs with manifest.probe.name == "
                              "'suggestibility', or --suggestibility CSV)")
    columns = ["model", "dataset", "attribution", "acc_truth", "acc_lying", "suggestibility", "n", "errors", "flagged"]
    rows = flagged(suggestibility(cells))
    checked = any(r.get("delivered_truth") is not None or r.get("delivered_lying") is not None for r in rows)
    if checked:
        columns += ["delivered_truth", "delivered_lying", "suggestibility_delivered"]
    note = "errors: probe predictions that ended in an error (counted wrong), truth and lying together"
    if checked:
        note += ("; delivered_truth, delivered_lying: the share of critiques that argued the label they were told to "
                 "(a lying critique that asserts the true label was not delivered); suggestibility_delivered: S "
                 "over the delivered critiques only")
    return Table("table4", TITLES["table4"], columns, records(rows, columns), note=note)


def _total(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def table5_costs(cells: Cells) -> Table:
    if not cells.costs:
        return skip("table5_costs", "no training-stage calls of plain runs (or no --costs CSV)")
    costs = [{**r, "total": _total([r["init_tokens"], r["critique_tokens"], r["summary_tokens"]])}
             for r in cells.costs]
    columns = ["model", "dataset", "init_tokens", "critique_tokens", "summary_tokens", "total"]
    return Table("table5_costs", TITLES["table5_costs"], columns, records(costs, columns))


def break_even_rows(cells: Cells) -> list[dict]:
    tokens: dict[tuple, dict] = {}
    for r in reasoning_tokens(cells):
        tokens.setdefault((r["model"], r["dataset"]), {})[r["strategy"]] = r["tokens_per_question"]
    rows = []
    for cost in cells.costs:
        per_query = tokens.get((cost["model"], cost["dataset"]), {})
        for strategy, stages in vocab.OFFLINE_STAGES.items():
            paid = [cost[COST_STAGES[stage]] for stage in stages]
            if any(v is None for v in [*paid, per_query.get(strategy), per_query.get(vocab.EP_LABEL)]):
                continue
            offline = float(sum(paid))
            saving = float(per_query[vocab.EP_LABEL] - per_query[strategy])
            rows.append({"model": cost["model"], "dataset": cost["dataset"], "strategy": strategy,
                         "offline_tokens": offline, "saving_per_query": saving,
                         "break_even": offline / saving if saving > 0 else "never"})
    return rows


def table5(cells: Cells) -> Table:
    if not cells.costs:
        return skip("table5", "no offline costs (training-stage calls of plain runs, or --costs CSV)")
    if not reasoning_tokens(cells):
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


def ablation_table(cells: Cells, name: str) -> Table:
    key = vocab.ABLATIONS[name]
    rows = [r for r in cells.ablations if r["ablation"] == name]
    if not rows:
        return skip(key, f"no ablation runs with manifest.ablation.name == {name!r} among the inputs")
    rows = flagged(sort_strategies(rows, ["model", "dataset"]))
    columns = ["model", "dataset", "strategy", "value", "accuracy", "n", "errors", "flagged"]
    order = sorted(dict.fromkeys(r["value"] for r in rows), key=value_key)
    labels = {v: f"{ABLATION_LABELS[name]}={v}" for v in order}
    index = ["model", "dataset", "strategy"]
    view_columns, view_rows = wide_view(rows, index, "value", "accuracy", order, labels)
    view_rows = with_errors(view_rows, rows, index, "value", labels)
    note = ERROR_NOTE if any(r["flagged"] for r in rows) else ""
    return Table(key, TITLES[key], columns, records(rows, columns), None, view_columns, view_rows, note)


def table9(cells: Cells) -> Table:
    train = [{**r, "strategy": vocab.TRAIN} for r in cells.train if r["timeout_rate"] is not None]
    test = [r for r in cells.accuracy if r["timeout_rate"] is not None]
    if not train and not test:
        return skip("table9", "no timeout information (no predictions, or results.csv without timeout_rate)")
    rows = sort_strategies(train + test, ["model", "dataset"])
    columns = ["model", "dataset", "strategy", "timeout_rate", "parse_fail_rate", "error_rate", "overflow_rate", "n",
               "errors", "overflows"]
    view_columns, view_rows = wide_view(rows, ["model", "dataset"], "strategy", "timeout_rate",
                                        strategy_order(r["strategy"] for r in rows))
    view_rows = with_errors(view_rows, rows, ["model", "dataset"], "strategy")
    view_rows = with_errors(view_rows, rows, ["model", "dataset"], "strategy", count="overflows", word="overflow")
    note = ("parse_fail_rate (JSON): answers that could not be parsed; error_rate: predictions that ended in an "
            "error (a failed call: no answer to parse, so never a parse failure); overflow_rate, (N overflow): prompts "
            "that did not fit the model's context window, not sent; all count as wrong in every accuracy; "
            + ERROR_NOTE)
    return Table("table9", TITLES["table9"], columns, records(rows, columns), None, view_columns, view_rows, note)


def per_user_view(rows: list[dict], summary: list[dict]) -> tuple[list[str], list[dict], str]:
    """One row per dataset, model and strategy, one column per user, named by the user's own id
    (datasets with other users leave those columns empty)."""
    order = sorted({r["user"] for r in rows}, key=name_key)
    index = ["dataset", "model", "strategy"]
    columns, view = wide_view(rows, index, "user", "accuracy", order)
    view = with_errors(view, rows, index, "user")
    stats = {(r["dataset"], r["model"], r["strategy"]): (r["mean"], r["sd"]) for r in summary}
    for row in view:
        row["mean"], row["sd"] = stats[(row["dataset"], row["model"], row["strategy"])]
    return columns + ["mean", "sd"], view, ""


def user_summary(cells: Cells) -> list[dict]:
    """Mean, population SD (as the paper: over all of a dataset's users), min and max over users."""
    groups: dict[tuple, list] = {}
    for r in cells.per_user:
        groups.setdefault((r["model"], r["dataset"], r["strategy"]), []).append(r)
    rows = [{"model": m, "dataset": d, "strategy": s, "users": len(users), "mean": mean(acc),
             "sd": statistics.pstdev(acc) if len(acc) > 1 else None, "min": min(acc), "max": max(acc),
             "errors": sum(r.get("errors") or 0 for r in users)}
            for (m, d, s), users in groups.items() for acc in [[r["accuracy"] for r in users]]]
    return flagged(sort_strategies(rows, ["model", "dataset"]))


def table10(cells: Cells) -> Table:
    if not cells.per_user:
        return skip("table10", "no preference dataset among the run directories (dataset.kind == 'preference')")
    rows = flagged(sort_strategies(cells.per_user, ["dataset", "model"]))
    columns = ["model", "dataset", "strategy", "user", "accuracy", "n", "errors", "flagged"]
    view_columns, view_rows, users = per_user_view(rows, user_summary(cells))
    notes = [users, "sd: population SD over users, as in the paper", ERROR_NOTE if any(r["flagged"] for r in rows)
             else ""]
    return Table("table10", TITLES["table10"], columns, records(rows, columns), None, view_columns, view_rows,
                 "; ".join(n for n in notes if n))


def table11(cells: Cells) -> Table:
    if not cells.per_user:
        return skip("table11", "no preference dataset among the run directories (dataset.kind == 'preference')")
    columns = ["model", "dataset", "strategy", "users", "mean", "sd", "min", "max", "errors", "flagged"]
    return Table("table11", TITLES["table11"], columns, records(user_summary(cells), columns),
                 note="sd: population SD over users, as in the paper; errors: predictions that ended in an error "
                      "(counted wrong)")


def mismatch_table(cells: Cells) -> Table:
    if not cells.mismatch:
        return skip("mismatch", "no episodic memory among the plain runs read (memory/episodic.jsonl)")
    columns = ["model", "dataset", "entries", "mismatches", "mismatch_rate"]
    note = ("entries: critiques in the run's episodic memory that were shown a label; mismatches: those whose "
            "assertion names another label than the one shown (the gold; with --critic noisy:R a flipped one for "
            "some items; critiques of a self critic, shown none, are not counted), in percent as mismatch_rate")
    return Table("mismatch", TITLES["mismatch"], columns, records(cells.mismatch, columns), note=note)


def claim_c1_c2(cells: Cells) -> tuple[dict | None, dict | None]:
    wide, _ = study_points(cells)
    summaries = {b: paired_summary(list(gains(wide, vocab.BEST, b).values())) for b in vocab.BASELINES}
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
    return {"mean_token_reduction_pct": mean(cells), "cells": len(cells),
            "models": sorted({r["model"] for r in table.rows})}


def claim_c4(cells: Cells) -> dict | None:
    rows = [r for r in suggestibility(cells) if r["suggestibility"] is not None]
    if not rows:
        return None
    labels = [r["attribution"] if isinstance(r["attribution"], str) else "" for r in rows]
    primary = "" if "" in labels else sorted(set(labels))[0]
    chosen = {(r["model"], r["dataset"]): r["suggestibility"] for r, label in zip(rows, labels) if label == primary}
    out, wide = {"attribution": primary or None}, study_points(cells)[0]
    for baseline, suffix in ((vocab.ZERO_SHOT, "zero_shot"), (vocab.EP_LABEL, "ep_label")):
        gain = gains(wide, vocab.BEST, baseline)
        both = [(s, gain[p]) for p, s in chosen.items() if p in gain]
        result = spearman([s for s, _ in both], [g for _, g in both])
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
              table11(cells), mismatch_table(cells)]
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
