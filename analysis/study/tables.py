"""The study's tables (docs/method.md section 5), each built from `Cells`; Table 2 and the headline claims are
analysis.study.claims'.

Every table function returns a `Table`: long rows for machine use, an optional wide
view for reading, or `skipped` with one line saying why the inputs cannot fill it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from critique.base import vocab
from critique.analysis.study import answers, intervals, references
from critique.analysis.study.cells import COST_STAGES, PROMPT_COST_STAGES, Cells, mean, name_key, value_key
from critique.analysis.study.claims import claims, table2
from critique.analysis.study.tabular import (ERROR_NOTE, TITLES, Table, flagged, n_view, plain_value, records, skip,
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
    acc = [{**r, "shown": with_interval(r)} for r in flagged(sort_strategies(cells.accuracy, ["model", "dataset"]))]
    columns = ["model", "dataset", "strategy", "accuracy", "ci_low", "ci_high", "ci_method", "n", "errors", "flagged",
               "majority"]
    index = ["model", "dataset"]
    view_columns, view_rows = wide_view(acc, index, "strategy", "shown", strategy_order(r["strategy"] for r in acc))
    view_rows = with_errors(view_rows, acc, index, "strategy")
    ns, majorities = n_view(acc, index), {(r["model"], r["dataset"]): r.get("majority") for r in acc}
    extra = (["n"] if ns else []) + (["majority"] if any(v is not None for v in majorities.values()) else [])
    view_rows = [{**{k: row[k] for k in index}, "n": ns.get(tuple(row[k] for k in index)),
                  "majority": plain_value(majorities.get(tuple(row[k] for k in index))),
                  **{k: v for k, v in row.items() if k not in index}} for row in view_rows]
    view_columns = index + extra + view_columns[len(index):]
    notes = ["n: test predictions per strategy"] + ([ERROR_NOTE] if any(r["flagged"] for r in acc) else [])
    if any(r.get("ci_low") is not None for r in acc):
        notes.insert(1, "[low, high]: " + intervals.NOTE)
    if "majority" in extra:
        notes.insert(1, "majority: always giving the most frequent gold label of the train split (of the test split "
                        "when no train prediction was read), per user for preference data")
    return Table("table1", TITLES["table1"], columns, records(acc, columns), None, view_columns, view_rows,
                 "; ".join(notes))


def with_interval(row: dict):
    """A Table 1 cell as shown: the accuracy, with its 95% interval where there is one."""
    accuracy, low, high = row["accuracy"], row.get("ci_low"), row.get("ci_high")
    if accuracy is None or low is None or high is None:
        return accuracy
    return f"{accuracy:.1f} [{low:.1f}, {high:.1f}]"


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
    columns = ["model", "dataset", "strategy", "tokens_per_question", "prompt_tokens_per_question", "reduction_pct"]
    view_columns, view_rows = token_view(tokens)
    note = ("each strategy: completion tokens per question (reasoning included; the paper's measure), and beside it "
            "(prompt) the prompt (input) tokens per question, '-' where the calls reported none; "
            "reduction_pct (JSON): relative reduction of completion tokens versus EP_LABEL of the same model and "
            "dataset")
    return Table("table3", TITLES["table3"], columns, records(tokens, columns), None, view_columns, view_rows, note)


def token_view(tokens: list[dict]) -> tuple[list[str], list[dict]]:
    """Table 3's wide view: per strategy its completion tokens per question, then its prompt tokens."""
    index, order = ["model", "dataset"], strategy_order(r["strategy"] for r in tokens)
    labels = {s: f"{s} (prompt)" for s in order}
    columns, rows = wide_view(tokens, index, "strategy", "tokens_per_question", order)
    _, prompt_rows = wide_view(tokens, index, "strategy", "prompt_tokens_per_question", order, labels)
    view_columns = index + [c for name in columns[len(index):] for c in (name, labels[name])]
    return view_columns, [{**row, **prompt} for row, prompt in zip(rows, prompt_rows)]


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
    costs = [{**r, "total": _total([r[c] for c in COST_STAGES.values()]),
              "prompt_total": _total([r.get(c) for c in PROMPT_COST_STAGES.values()])} for r in cells.costs]
    columns = ["model", "dataset", *COST_STAGES.values(), "total", *PROMPT_COST_STAGES.values(), "prompt_total",
               "dollars"]
    note = ("init, critique, summary: completion tokens of the initial predictions, the critiques and the summary "
            "(the paper's measure), total their sum; *_prompt_tokens, prompt_total: the prompt (input) tokens of the "
            "same calls ('-' where the calls reported none); dollars: what those calls cost, prompt and completion "
            "tokens at the run's price (its manifest's; '-' where no price is known)")
    return Table("table5_costs", TITLES["table5_costs"], columns, records(costs, columns), note=note)


def _break_even(offline: float | None, saving: float | None):
    if offline is None or saving is None:
        return None
    return offline / saving if saving > 0 else "never"


def _with_prompt(completion, prompt) -> float | None:
    return None if completion is None or prompt is None else float(completion) + float(prompt)


def break_even_rows(cells: Cells) -> list[dict]:
    """Per (model, dataset) and critique strategy: the offline tokens of the stages it pays
    (vocab.OFFLINE_STAGES: the whole train stage), the saving per query against EP_LABEL and the
    break-even, on completion tokens (the paper's) and on completion + prompt tokens (``*_total``;
    None where prompt tokens are missing)."""
    tokens: dict[tuple, dict] = {}
    for r in reasoning_tokens(cells):
        tokens.setdefault((r["model"], r["dataset"]), {})[r["strategy"]] = r
    rows = []
    for cost in cells.costs:
        per_query = tokens.get((cost["model"], cost["dataset"]), {})
        label = per_query.get(vocab.EP_LABEL)
        for strategy, stages in vocab.OFFLINE_STAGES.items():
            paid = [cost[COST_STAGES[stage]] for stage in stages]
            if any(v is None for v in paid) or label is None or strategy not in per_query:
                continue
            mine = per_query[strategy]
            offline = float(sum(paid))
            saving = float(label["tokens_per_question"] - mine["tokens_per_question"])
            prompts = [cost.get(PROMPT_COST_STAGES[stage]) for stage in stages]
            offline_total = None if any(v is None for v in prompts) else offline + float(sum(prompts))
            total = [_with_prompt(r["tokens_per_question"], r.get("prompt_tokens_per_question")) for r in (label, mine)]
            saving_total = None if None in total else total[0] - total[1]
            rows.append({"model": cost["model"], "dataset": cost["dataset"], "strategy": strategy,
                         "offline_tokens": offline, "offline_dollars": cost.get("dollars"), "saving_per_query": saving,
                         "break_even": _break_even(offline, saving), "offline_total_tokens": offline_total,
                         "saving_total_per_query": saving_total,
                         "break_even_total": _break_even(offline_total, saving_total)})
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
    columns = ["model", "dataset", "strategy", "offline_tokens", "offline_dollars", "saving_per_query", "break_even",
               "offline_total_tokens", "saving_total_per_query", "break_even_total"]
    note = ("break_even = offline tokens / (EP_LABEL tokens per query - strategy tokens per query), on completion "
            "tokens, as the paper; 'never' when the saving is not positive. Every critique strategy, EP_CRIT "
            "included, pays the whole train stage: initial predictions + critiques + summary. *_total: the same on "
            "completion + prompt tokens (the offline calls' and each query's input counted too); '-' where the "
            "calls reported no prompt tokens; offline_dollars: the offline calls' cost at the run's price ('-' "
            "where no price is known)")
    return Table("table5", TITLES["table5"], columns, rows, note=note)


def ablation_table(cells: Cells, name: str) -> Table:
    key = vocab.ABLATIONS[name]
    rows = [{**r, "source": "ablation"} for r in cells.ablations if r["ablation"] == name]
    if not rows:
        return skip(key, f"no ablation runs with manifest.ablation.name == {name!r} among the inputs")
    rows = flagged(sort_strategies(rows + plain_value_rows(cells, name, rows), ["model", "dataset"]))
    columns = ["model", "dataset", "strategy", "value", "accuracy", "n", "errors", "flagged", "source"]
    order = sorted(dict.fromkeys(r["value"] for r in rows), key=value_key)
    labels = {v: f"{ABLATION_LABELS[name]}={v}" for v in order}
    index = ["model", "dataset", "strategy"]
    view_columns, view_rows = wide_view(rows, index, "value", "accuracy", order, labels)
    view_rows = with_errors(view_rows, rows, index, "value", labels)
    from_plain = sorted({f"{labels[r['value']]} of {r['model']} / {r['dataset']}" for r in rows
                         if r["source"] == "plain run"})
    notes = [f"{', '.join(from_plain)}: the plain run's own {ABLATION_LABELS[name]} (source in JSON), which no "
             "ablation run of that value repeats"] if from_plain else []
    note = "; ".join(notes + ([ERROR_NOTE] if any(r["flagged"] for r in rows) else []))
    return Table(key, TITLES[key], columns, records(rows, columns), None, view_columns, view_rows, note)


PLAIN_SETTING = {"k": "k"}  # an ablation whose value the plain run also has: its setting of that name


def plain_value_rows(cells: Cells, name: str, rows: list[dict]) -> list[dict]:
    """The plain run's cells as the ablation's row at the plain run's own value (e.g. K=5), for each
    (model, dataset) and strategy of the ablation that has no ablation run of that value."""
    setting = PLAIN_SETTING.get(name)
    if setting is None:
        return []
    have = {(r["model"], r["dataset"], r["strategy"], r["value"]) for r in rows}
    plain = {(r["model"], r["dataset"], r["strategy"]): r for r in cells.accuracy}
    out = []
    for model, dataset, strategy in dict.fromkeys((r["model"], r["dataset"], r["strategy"]) for r in rows):
        value = ((cells.labels.get((model, dataset)) or {}).get("settings") or {}).get(setting)
        cell = plain.get((model, dataset, strategy))
        if value is None or cell is None or (model, dataset, strategy, value) in have:
            continue
        out.append({"ablation": name, "model": model, "dataset": dataset, "strategy": strategy, "value": value,
                    "accuracy": cell["accuracy"], "n": cell["n"], "errors": cell["errors"], "source": "plain run"})
    return out


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


NO_PER_USER = ("no test-stage answer on a preference dataset (dataset.kind == 'preference') among the run "
               "directories; a stream's answers are in the stream table")


def table10(cells: Cells) -> Table:
    if not cells.per_user:
        return skip("table10", NO_PER_USER)
    rows = flagged(sort_strategies(cells.per_user, ["dataset", "model"]))
    columns = ["model", "dataset", "strategy", "user", "accuracy", "n", "errors", "flagged"]
    view_columns, view_rows, users = per_user_view(rows, user_summary(cells))
    notes = [users, "sd: population SD over users, as in the paper", ERROR_NOTE if any(r["flagged"] for r in rows)
             else ""]
    return Table("table10", TITLES["table10"], columns, records(rows, columns), None, view_columns, view_rows,
                 "; ".join(n for n in notes if n))


def table11(cells: Cells) -> Table:
    if not cells.per_user:
        return skip("table11", NO_PER_USER)
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


def build(cells: Cells) -> Result:
    t3 = table3(cells)
    tables = [table1(cells), table2(cells), t3, table4(cells), table5_costs(cells), table5(cells),
              *(ablation_table(cells, name) for name in vocab.ABLATIONS), table9(cells), table10(cells),
              table11(cells), mismatch_table(cells), answers.table(cells), references.table(cells)]
    found, why = claims(cells, t3, suggestibility(cells))
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
