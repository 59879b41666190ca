"""`critique tables --inference`: item-level tables beside the paper's (analysis.stats.inference).

The paper's Table 2 and claims C1/C2 treat each (model, dataset) point as one observation and
test with a sign test over points. The logs hold every item's answer under every strategy, so
each point's comparison can be tested on its own items (paired: McNemar, a bootstrap interval),
the family of tests adjusted (Holm), and the strategies' effects estimated over all points in
one model clustered by item. Built from the counted test predictions of plain runs
(analysis.reading.frames.Logs.outcomes), grouped exactly as Table 1 groups them.

The work is done where scipy is already loaded: `compute` (pandas, statsmodels, reading the
predictions, the paired and pooled tests) runs in analysis.stats.core's helper process while this
process reads the logs for the paper's tables; `finish` adds what needs those tables (Holm over
Table 2, C4 within dataset); `tables` makes them readable. Without a helper (library use, a
platform without fork) the same functions run here.
"""

from __future__ import annotations

from dataclasses import dataclass

from critique.analysis.study.cells import Cells
from critique.analysis.study.points import condition_order, conditions, gains, study_points
from critique.analysis.stats.core import MDE_NOTE
from critique.analysis.study.tables import Result, suggestibility
from critique.analysis.study.tabular import Table, records
from critique.base import vocab

SEED, RESAMPLES, CONFIDENCE = 0, 2000, 0.95
TITLES = {
    "paired": "Item-level: paired difference (points) of each critique strategy over each baseline, per (model, "
              "dataset)",
    "pooled": "Item-level: pooled odds ratio of each critique strategy against each baseline, over every (model, "
              "dataset) of one experiment",
    "controls": "Item-level: the label memory against no memory (EP_LABEL over zero_shot) in each control, per "
                "(model, dataset)",
    "table2_holm": "Table 2 with Holm-adjusted sign-test p-values (one family per experiment)",
    "c4_within": "C4 within dataset: Spearman between suggestibility and the EP+SEM_CRIT gain",
    "spread": "Run-to-run spread of accuracy (%) over repeats of one cell (consistency-probe repeats; seeds)",
}
WHEN = ("The paper's sign test (Table 2) asks whether a strategy wins on more (model, dataset) points than it "
        "loses: it needs many points and ignores how many items each point has, so trust it for a claim across "
        "models and datasets when there are ten or more points. The item-level tests ask whether a strategy beats a "
        "baseline on the items of one point (McNemar, bootstrap interval; Holm over all of them) or on all items at "
        "once (the pooled model): trust them for a claim about a point, or with few points, as long as the items are "
        "a sample of the questions the claim is about.")


@dataclass
class Inference:
    tables: list[Table]
    data: dict  # the JSON object "inference"
    c4_within: dict | None = None  # claims.C4.within_dataset


def test_rows(outcomes):
    plain = outcomes["probe"].isna() & outcomes["ablation"].isna()
    return outcomes[plain & (outcomes["stage"] == vocab.TEST) & outcomes["strategy"].notna()]


def _repeats(outcomes):
    """The counted predictions of repeated cells, with `repeat`: consistency-probe repeats of the
    zero-shot answer, and plain runs that differ in their seed alone."""
    import pandas as pd

    parts = []
    repeats = outcomes[(outcomes["stage"] == vocab.PROBE) & outcomes["strategy"].fillna("").str.startswith("repeat-")]
    if len(repeats):
        parts.append(repeats.assign(strategy=f"{vocab.ZERO_SHOT} (consistency probe)",
                                    repeat=repeats["strategy"].str.removeprefix("repeat-")))
    tests = test_rows(outcomes)
    if len(tests):
        several = tests[tests.groupby(["base_model", "dataset", "unseeded"])["seed"].transform("nunique") > 1]
        if len(several):
            parts.append(several.assign(model=several["base_model"] + " (seeds)", repeat=several["seed"].astype(str)))
    return pd.concat(parts, ignore_index=True) if parts else None


def experiments(metas: list[dict], tests) -> list[tuple[str, object]]:
    """The test predictions of each experiment (analysis.study.points.conditions: a critic condition, a prompt
    set, ...), the default settings' first: each is its own family of tests and its own pooled fit, so
    answers shared between experiments (zero_shot does not depend on the critic) count once in each."""
    from critique.analysis.reading.read import model_label, plain

    labels = {(model_label(m), m["dataset"]): {"model": m["model"], "settings": m["settings"]}
              for m in metas if plain(m)}
    condition = conditions(labels)
    tests = tests.assign(condition=[condition.get(point, "") for point in zip(tests["model"], tests["dataset"])])
    return [(c, tests[tests["condition"] == c]) for c in condition_order(labels) or [""]]


def _without_errors(tests) -> tuple[object, list[str]]:
    """The pooled fit's predictions: a (model, dataset, strategy) cell with an error left out (its accuracy
    is not the model's; an all-error experiment is no tie), and what was left out."""
    cells = ["model", "dataset", "strategy"]
    bad = tests.groupby(cells)["error"].transform("any") if len(tests) else tests["error"]
    left = sorted({" / ".join(map(str, key)) for key in tests[bad][cells].itertuples(index=False)})
    return tests[~bad], left


def compute(metas: list[dict], seed: int = SEED, resamples: int = RESAMPLES) -> dict:
    """The item-level numbers that need only the logs: paired rows (Holm within each experiment), pooled
    rows (one fit per experiment), repeat spread."""
    from critique.analysis.reading import frames
    from critique.analysis.stats import inference

    logs = frames.Logs(metas)
    outcomes = logs.outcomes()
    paired, pooled, left_out, controls = [], [], [], []
    for condition, tests in experiments(metas, test_rows(outcomes)):
        paired += [{"condition": condition, **r} for r in _marked(inference.records(inference.paired(
            tests, seed=seed, resamples=resamples, confidence=CONFIDENCE)), tests)]
        if "control=" in condition:
            controls += [{"condition": condition, **r} for r in _marked(inference.records(inference.paired(
                tests, seed=seed, resamples=resamples, confidence=CONFIDENCE, pairs=inference.CONTROL_PAIRS)), tests)]
        clean, left = _without_errors(tests)
        pooled += [{"condition": condition, **r} for r in inference.records(inference.pooled(clean))]
        left_out += [f"{condition}: {cell}" if condition else cell for cell in left]
    for row in pooled:  # a zero standard error (no discordant item anywhere) gives no interval
        if row["ci_low"] is not None and row["ci_low"] == row["ci_high"]:
            row["ci_low"] = row["ci_high"] = row["p"] = None
    repeated = _repeats(outcomes)
    return {"paired": paired, "pooled": pooled, "pooled_left_out": left_out, "controls": controls,
            "errors": logs.errors,
            "repeat_spread": inference.records(inference.repeat_spread(repeated)) if repeated is not None else [],
            "seed": seed, "resamples": resamples, "confidence": CONFIDENCE, "when": WHEN}


def _marked(rows: list[dict], tests) -> list[dict]:
    """Paired rows with what a reader must see beside them: `errors` (predictions of either arm that
    ended in an error, counted wrong) and `flagged`; `direction_agrees` (false: the difference,
    averaged per user on preference data, and the discordant items, counted over all items, point
    opposite ways); no interval where no item is discordant (it would read as exact)."""
    errors = tests[tests["error"]].groupby(["model", "dataset", "strategy"]).size().to_dict()
    for row in rows:
        row["errors"] = int(errors.get((row["model"], row["dataset"], row["strategy"]), 0)
                            + errors.get((row["model"], row["dataset"], row["baseline"]), 0))
        row["flagged"] = row["errors"] > 0
        wins, losses, diff = row["discordant_wins"], row["discordant_losses"], row["diff"]
        sign = (wins > losses) - (wins < losses)
        row["direction_agrees"] = diff is None or ((diff > 0) - (diff < 0)) == sign
        if wins + losses == 0:
            row["ci_low"] = row["ci_high"] = None
    return rows


def finish(computed: dict, table2_p: list, c4_points: dict[str, list[dict]] | None) -> dict:
    """`computed` and what needs the paper's tables: Holm over Table 2's sign tests (`table2_p`: (condition,
    p) in its row order; one family per condition) and, per baseline, Spearman within dataset over C4's
    points (dicts of model, dataset, suggestibility, gain)."""
    from critique.analysis.stats import inference

    adjusted: list = [None] * len(table2_p)
    for condition in dict.fromkeys(c for c, _ in table2_p):
        mine = [i for i, (c, _) in enumerate(table2_p) if c == condition]
        for i, p in zip(mine, inference.holm([table2_p[i][1] for i in mine])):
            adjusted[i] = p
    data = {**computed, "table2_p_holm": adjusted}
    data["c4_within"] = None if c4_points is None else {
        f"vs_{suffix}": inference.within_dataset_spearman(rows) for suffix, rows in c4_points.items()}
    return data


def c4_points(cells: Cells, result: Result) -> dict[str, list[dict]] | None:
    """Per baseline, C4's points: suggestibility (the claim's attribution) and the EP+SEM_CRIT gain."""
    claim = result.claims.get("C4")
    if not claim:
        return None
    primary = claim.get("attribution") or ""
    suggestible = {(r["model"], r["dataset"]): r["suggestibility"] for r in suggestibility(cells)
                   if (r["attribution"] or "") == primary and r["suggestibility"] is not None}
    wide, out = study_points(cells)[0], {}
    for baseline, suffix in ((vocab.ZERO_SHOT, "zero_shot"), (vocab.EP_LABEL, "ep_label")):
        gain = gains(wide, vocab.BEST, baseline)
        out[suffix] = [{"model": m, "dataset": d, "suggestibility": s, "gain": gain[(m, d)]}
                       for (m, d), s in suggestible.items() if (m, d) in gain]
    return out


def table2_p(result: Result) -> list[tuple[str, float | None]]:
    """(condition, p_sign) of each Table 2 row, in its order."""
    table2 = result.table("table2")
    return [] if table2.skipped else [(r.get("condition") or "", r["p_sign"]) for r in table2.rows]


PAIRED = ["model", "dataset", "strategy", "baseline", "n", "acc_strategy", "acc_baseline", "diff", "ci_low", "ci_high",
          "discordant_wins", "discordant_losses", "p_mcnemar", "p_holm", "mde", "errors", "flagged", "direction_agrees"]
POOLED = ["strategy", "baseline", "odds_ratio", "ci_low", "ci_high", "p"]
SPREAD = ["model", "dataset", "strategy", "repeats", "mean", "sd", "min", "max"]


def tables(data: dict, result: Result) -> Inference:
    """The readable tables of `finish`'s data, and the JSON object "inference"."""
    out = []
    if data["paired"]:
        note = (f"n: items answered under both; diff = acc_strategy - acc_baseline; {data['confidence']:.0%} "
                f"percentile bootstrap interval over items ({data['resamples']} resamples, seed {data['seed']}; users "
                "resampled as clusters on preference data, whose accuracy is the mean over users as in Table 1); "
                "discordant: items the strategy got right and the baseline wrong (wins) and the reverse (losses); "
                "p_mcnemar: exact McNemar test on them (items, not users: on preference data it ignores the "
                "clustering the interval respects); p_holm: Holm-adjusted over the rows of its experiment (one family "
                "per condition, never pooled across them); " + MDE_NOTE + "; no interval "
                "where no item is discordant; errors: predictions of either arm that ended in an error (flagged: "
                "counted wrong, not answers of the model); direction_agrees no: the per-user difference and the "
                "discordant items point opposite ways, so read the two apart")
        out.append(Table("paired", TITLES["paired"], _named(PAIRED, data["paired"]),
                         records(data["paired"], _named(PAIRED, data["paired"])), note=note))
    else:
        out.append(Table("paired", TITLES["paired"], skipped="no (model, dataset) point has a critique strategy and "
                                                             "a baseline answered on the same items"))
    out.append(_pooled_table(data))
    out.append(_controls_table(data))
    table2 = result.table("table2")
    holm_rows = [] if table2.skipped else [{**r, "p_holm": p} for r, p in zip(table2.rows, data["table2_p_holm"])]
    holm_columns = _named(["critique", "baseline", "n", "mean", "wins", "losses", "ties", "p_sign", "p_holm"],
                          holm_rows)
    out.append(Table("table2_holm", TITLES["table2_holm"], holm_columns, holm_rows, skipped=table2.skipped,
                     note="p_holm: Holm over the sign tests of Table 2 of its condition, one family per experiment "
                          "(ties and untestable rows left out)"))
    out.append(_c4_table(data["c4_within"], result))
    if data["repeat_spread"]:
        out.append(Table("spread", TITLES["spread"], SPREAD, records(data["repeat_spread"], SPREAD),
                         note="sd: sample SD of the accuracy over repeats"))
    else:
        out.append(Table("spread", TITLES["spread"], skipped="no cell was repeated (no consistency probe, no runs "
                                                             "that differ in their seed alone)"))
    json_data = {k: data[k] for k in ("paired", "pooled", "pooled_left_out", "repeat_spread", "seed", "resamples",
                                      "confidence", "when")}
    json_data["controls"] = data.get("controls", [])
    json_data["table2_holm"] = holm_rows
    return Inference(out, json_data, data["c4_within"])


def _named(columns: list[str], rows: list[dict]) -> list[str]:
    """`columns`, led by the experiment's condition when the rows hold a named one."""
    return (["condition"] if any(r.get("condition") for r in rows) else []) + columns


def _pooled_table(data: dict) -> Table:
    """One pooled fit per experiment (condition); the cells left out for their errors named."""
    methods = "; ".join(dict.fromkeys(
        (f"{r['condition']}: " if r.get("condition") else "") + r["method"].rstrip(".")
        for r in data["pooled"] if r.get("method")))
    left = data.get("pooled_left_out") or []
    note = "odds ratio > 1: the strategy is more often right than the baseline; " + methods
    if left:
        note += ("; left out of the fit, their predictions ended in an error (not answers of the model): "
                 + ", ".join(left))
    columns = _named(POOLED, data["pooled"])
    return Table("pooled", TITLES["pooled"], columns, records(data["pooled"], columns), note=note,
                 formats={"ci_low": ".2f", "ci_high": ".2f"})


def _controls_table(data: dict) -> Table:
    """EP_LABEL over zero_shot at each control point: the harness sees an effect where one exists (control=positive)
    and invents none where none exists (control=negative)."""
    rows = data.get("controls") or []
    if not rows:
        return Table("controls", TITLES["controls"], skipped="no control (control-pos, control-neg) with EP_LABEL and "
                                                             "zero_shot answered on the same items")
    columns = _named(PAIRED, rows)
    note = ("the columns as in the paired table; p_mcnemar: exact McNemar on the discordant items; p_holm: Holm over "
            "the control points of its experiment; " + MDE_NOTE + ". A positive control should show a large gain "
            "with a tiny p, a negative control none beyond chance (its mde: how large a gain it could have missed)")
    return Table("controls", TITLES["controls"], columns, records(rows, columns), note=note)


def _c4_table(within: dict | None, result: Result) -> Table:
    if within is None:
        return Table("c4_within", TITLES["c4_within"], skipped=result.claim_skips.get("C4", "no C4"))
    rows, method = [], ""
    for baseline, suffix in ((vocab.ZERO_SHOT, "zero_shot"), (vocab.EP_LABEL, "ep_label")):
        found = within[f"vs_{suffix}"]
        rows += [{"baseline": baseline, **{k: r[k] for k in ("dataset", "n", "rho", "p")}}
                 for r in found["per_dataset"]]
        whole = found["pooled_within"]
        rows.append({"baseline": baseline, "dataset": "(within every dataset)", "n": whole["n"], "rho": whole["rho"],
                     "p": whole["p"]})
        method = whole.get("method") or method
    note = ("the paper's C4 pools points of all datasets, where suggestibility and gain both vary by dataset; "
            f"(within every dataset): {method}")
    return Table("c4_within", TITLES["c4_within"], ["baseline", "dataset", "n", "rho", "p"], rows, note=note)


def build(metas: list[dict], result: Result, cells: Cells, seed: int = SEED, resamples: int = RESAMPLES) -> Inference:
    """Everything in this process (library use, tests)."""
    return tables(finish(compute(metas, seed, resamples), table2_p(result), c4_points(cells, result)), result)
