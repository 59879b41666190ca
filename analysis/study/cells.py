"""Per-cell numbers (model x dataset x strategy, ...) that every table is built from.

`Cells` is the one shape both inputs produce: `from_logs` (run directories) and
`analysis.study.csv_input` (per-cell numbers a user already has): for each kind of cell a list of
rows (dicts with the columns of COLUMNS; None where a number is missing). Rates are in
percent. For preference data a rate is computed per user, then averaged over users. `errors`
counts the predictions that ended in an error (a failed call, a missing memory): they count
wrong in every accuracy, and the tables flag their cells. `majority` is the accuracy of always
giving the most frequent gold label of the train split (of the test split when no train
prediction was read), per user for preference data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from critique.analysis.reading import tally
from critique.analysis.study import intervals
from critique.base import vocab
from critique.analysis.reading.load import Logs
from critique.analysis.reading import prices as prices_mod
from critique.analysis.reading.read import model_label, plain

COLUMNS = {
    "accuracy": ["model", "dataset", "strategy", "accuracy", "timeout_rate", "parse_fail_rate", "error_rate",
                 "overflow_rate", "n", "errors", "overflows", "majority", "ci_low", "ci_high", "ci_method"],
    "train": ["model", "dataset", "timeout_rate", "parse_fail_rate", "error_rate", "overflow_rate", "n", "errors",
              "overflows"],
    "per_user": ["model", "dataset", "strategy", "user", "accuracy", "n", "errors"],
    "tokens": ["model", "dataset", "strategy", "tokens_per_question", "prompt_tokens_per_question", "reasoning"],
    "costs": ["model", "dataset", "init_tokens", "critique_tokens", "summary_tokens", "init_prompt_tokens",
              "critique_prompt_tokens", "summary_prompt_tokens", "dollars"],
    "suggestibility": ["model", "dataset", "attribution", "acc_truth", "acc_lying", "n", "errors", "delivered_truth",
                       "delivered_lying", "acc_truth_delivered", "acc_lying_delivered"],
    "ablations": ["ablation", "model", "dataset", "strategy", "value", "accuracy", "n", "errors"],
    "mismatch": ["model", "dataset", "entries", "mismatches", "mismatch_rate"],
}
COST_STAGES = {vocab.TRAIN: "init_tokens", vocab.CRITIQUE: "critique_tokens", vocab.SUMMARY: "summary_tokens"}
PROMPT_COST_STAGES = {stage: column.replace("_tokens", "_prompt_tokens") for stage, column in COST_STAGES.items()}


@dataclass
class Cells:
    accuracy: list[dict]  # test stage of plain runs
    train: list[dict]  # train_predict stage of plain runs
    per_user: list[dict]  # preference datasets only
    tokens: list[dict]  # mean completion tokens (reasoning included) and prompt tokens per answered test question
    costs: list[dict]  # total completion tokens, and prompt tokens, of the offline stages
    suggestibility: list[dict]  # accuracy with a truthful / a lying critique in context
    ablations: list[dict]  # test accuracy of ablation runs, by ablation name and value
    source: str = "logs"
    mismatch: list[dict] = field(default_factory=list)  # critiques that contradict the gold, per model x dataset
    # (model as shown, dataset) -> {"model": the model's own name, "settings": ...}: what a shown
    # model with its variant stands for (analysis.reading.read.label_variants); empty for CSV input
    labels: dict = field(default_factory=dict)
    # per test cell (model, dataset, strategy): its answer space and its confusion counts per user
    # (analysis.study.answers)
    confusion: list[dict] = field(default_factory=list)


def name_key(value) -> tuple:
    """Sorts names (models, datasets, strategies, users, attributions) as text; None last."""
    return (1, "", "") if value is None else (0, str(value), type(value).__name__)


def value_key(value) -> tuple:
    """Sorts ablation values: numbers by value, then text; None last."""
    if value is None:
        return (2, 0.0, "", "")
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if number != number:
        return (1, 0.0, str(value), type(value).__name__)
    return (0, number, str(value), type(value).__name__)


def key_order(key: tuple) -> tuple:
    """Sorts cell keys of names (see `name_key`)."""
    return tuple(name_key(v) for v in key)


def mean(values) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def over_users(records: list[dict], of, by_user: bool = True) -> float | None:
    """The mean over users of ``of(a user's records)`` (preference data: per user, then the mean over
    users, as every table); all records one group when not ``by_user``; None when there are none."""
    groups: dict = {}
    for r in records:
        groups.setdefault(r.get("user") if by_user else None, []).append(r)
    return mean(of(mine) for mine in groups.values())


def percent_correct(records: list[dict]) -> float | None:
    """Accuracy (%) of prediction records: those whose ``correct`` is true (an error or no answer is wrong)."""
    found = mean(r.get("correct") is True for r in records)
    return None if found is None else 100.0 * found


Groups = dict  # cell key -> user -> tally


def _add(groups: Groups, key: tuple, user, counts: list) -> None:
    per_user = groups.setdefault(key, {})
    if user not in per_user:
        per_user[user] = tally.new()
    tally.add(per_user[user], counts)


def rates(groups: Groups, keys: list[str], order=key_order) -> list[dict]:
    """Accuracy, timeout and parse-failure rates (%) per cell, sorted by key (`order`): per user
    first, then the mean over users; n counts records. A missing answer counts as wrong (see
    analysis.reading.tally)."""
    rows = []
    for key in sorted(groups, key=order):
        users = list(groups[key].values())
        row = dict(zip(keys, key))
        for column, slot in (("accuracy", tally.CORRECT), ("timeout_rate", tally.TIMEOUT),
                             ("parse_fail_rate", tally.PARSE_FAILED), ("error_rate", tally.ERRORS),
                             ("overflow_rate", tally.OVERFLOWS)):
            row[column] = mean([t[slot] / t[tally.RECORDS] * 100.0 for t in users])
        row["n"] = sum(t[tally.RECORDS] for t in users)
        row["errors"] = sum(t[tally.ERRORS] for t in users)
        row["overflows"] = sum(t[tally.OVERFLOWS] for t in users)
        row["timeouts"] = sum(t[tally.TIMEOUT] for t in users)
        row["users"] = len(users)
        rows.append(row)
    return rows


def cell_interval(users: dict) -> dict:
    """The 95% interval of a cell's accuracy (user -> tally; see analysis.study.intervals)."""
    return intervals.accuracy_interval([(t[tally.CORRECT], t[tally.RECORDS]) for t in users.values()])


def _pick(rows: list[dict], name: str) -> list[dict]:
    return [{c: row.get(c) for c in COLUMNS[name]} for row in rows]


def reasoning_models(logs: Logs) -> set[str]:
    """Models whose calls report reasoning tokens, or whose runs declare them reasoning models."""
    found = {model_label(m) for m in logs.runs if m["reasoning_declared"] is True}
    for experiment in logs.experiments:
        if any(t[tally.REASONING] for part in (experiment.predictions, experiment.calls) for t in part.values()):
            found.add(model_label(experiment.meta))
    return found


def _tokens(groups: Groups, reasoning: set[str]) -> list[dict]:
    """Mean completion tokens per answered question, where the answers carry tokens; beside them the mean
    prompt (input) tokens per answered question that reports them (None where none does)."""
    rows = []
    for key in sorted(groups, key=key_order):
        total = tally.new()
        for counts in groups[key].values():
            tally.add(total, counts)
        if total[tally.WITH_TOKENS]:
            model, dataset, strategy = key
            rows.append({"model": model, "dataset": dataset, "strategy": strategy,
                         "tokens_per_question": total[tally.TOKENS] / total[tally.WITH_TOKENS],
                         "prompt_tokens_per_question": total[tally.PROMPT_TOKENS] / total[tally.WITH_PROMPT]
                         if total[tally.WITH_PROMPT] else None,
                         "reasoning": model in reasoning})
    return rows


def _costs(offline: dict, prices: dict) -> list[dict]:
    """(model, dataset) -> stage -> tally of answered records => one row per (model, dataset) with an
    answered record of an offline stage: its stages' completion and prompt token sums (None without tokens),
    and their dollars at the price of its runs (``prices``: (model, dataset) -> the runs' prices;
    analysis.reading.prices)."""
    rows = []
    for (model, dataset) in sorted(offline, key=key_order):
        stages = offline[(model, dataset)]
        if not any(t[tally.ANSWERED] for t in stages.values()):
            continue
        row = {"model": model, "dataset": dataset}
        for stage, column in COST_STAGES.items():
            counts = stages.get(stage)
            row[column] = counts[tally.TOKENS] if counts and counts[tally.WITH_TOKENS] else None
            prompt = PROMPT_COST_STAGES[stage]
            row[prompt] = counts[tally.PROMPT_TOKENS] if counts and counts[tally.WITH_PROMPT] else None
        paid = [(row[PROMPT_COST_STAGES[stage]], row[column]) for stage, column in COST_STAGES.items()
                if stages.get(stage)]
        price = prices_mod.shared(prices.get((model, dataset), []))
        row["dollars"] = None if not paid or any(None in p for p in paid) else \
            prices_mod.dollars(price, sum(p for p, _ in paid), sum(c for _, c in paid))
        rows.append(row)
    return rows


def _prices(logs: Logs) -> dict[tuple, list]:
    """(model as shown, dataset) -> the prices of its plain runs (analysis.reading.prices)."""
    found: dict[tuple, list] = {}
    for meta in logs.runs:
        if plain(meta):
            found.setdefault((model_label(meta), meta["dataset"]), []).append(prices_mod.of_run(meta["path"]))
    return found


def strategy_cells(predictions: dict[tuple, list]) -> list[dict]:
    """Table 1's cells of one run's counted predictions ((stage, strategy, user) -> tally, see
    analysis.reading.tally.predictions), one row per test strategy in sorted order: the rates of `rates` (and the
    timeouts counted) with the tokens per answered question (`_tokens`)."""
    groups: Groups = {}
    for (stage, strategy, user), counts in predictions.items():
        if stage == vocab.TEST and strategy is not None:
            _add(groups, ("", "", strategy), user, counts)
    tokens = {row["strategy"]: row["tokens_per_question"] for row in _tokens(groups, set())}
    return [{**row, "tokens_per_question": tokens.get(row["strategy"])}
            for row in rates(groups, ["model", "dataset", "strategy"])]


def _most_frequent(gold: dict):
    return max(sorted(gold, key=name_key), key=lambda label: gold[label]) if gold else None


def majority(accuracy: Groups, train: Groups) -> dict[tuple, float]:
    """(model, dataset) -> accuracy (%) of always giving the train split's most frequent gold label
    (ties: the first label in sorted order; the test split's when no train prediction was read):
    per user, then the mean over users."""
    test: dict[tuple, dict] = {}  # point -> user -> gold counts of the strategy with the most records
    for (model, dataset, _), users in accuracy.items():
        for user, counts in users.items():
            have = test.setdefault((model, dataset), {}).get(user)
            if have is None or counts[tally.RECORDS] > have[tally.RECORDS]:
                test[(model, dataset)][user] = counts
    out = {}
    for point, users in test.items():
        rates_ = []
        for user, counts in users.items():
            gold, total = counts[tally.GOLD], sum(counts[tally.GOLD].values())
            label = _most_frequent((train.get(point, {}).get(user) or tally.new())[tally.GOLD] or gold)
            if total:
                rates_.append(gold.get(label, 0) / total * 100.0)
        if rates_:
            out[point] = mean(rates_)
    return out


def _delivery(groups: Groups, cell: tuple) -> dict:
    """Per arm: the share (%) of checked critiques that argued the label they were told to, and the
    accuracy (%) over those (pooled over users); None where no critique was checked (older logs)."""
    out = {}
    for arm, name in ((vocab.TRUTH, "truth"), (vocab.LYING, "lying")):
        total = tally.new()
        for counts in groups.get((*cell, arm), {}).values():
            tally.add(total, counts)
        checked, delivered = total[tally.CHECKED], total[tally.DELIVERED]
        out[f"delivered_{name}"] = delivered / checked * 100.0 if checked else None
        out[f"acc_{name}_delivered"] = total[tally.DELIVERED_CORRECT] / delivered * 100.0 if delivered else None
    return out


def _suggestibility(groups: Groups) -> list[dict]:
    cells = {}
    for row in rates(groups, ["model", "dataset", "attribution", "strategy"]):
        cell = cells.setdefault((row["model"], row["dataset"], row["attribution"]), {})
        cell[row["strategy"]] = row
    rows = []
    for (model, dataset, attribution), by_strategy in cells.items():
        truth, lying = by_strategy.get(vocab.TRUTH) or {}, by_strategy.get(vocab.LYING) or {}
        rows.append({"model": model, "dataset": dataset, "attribution": attribution,
                     "acc_truth": truth.get("accuracy"), "acc_lying": lying.get("accuracy"), "n": truth.get("n"),
                     "errors": truth.get("errors", 0) + lying.get("errors", 0),
                     **_delivery(groups, (model, dataset, attribution))})
    return rows


def _mismatch(logs: Logs) -> list[dict]:
    rows = []
    for experiment in logs.experiments:
        entries, mismatches = experiment.memory
        if experiment.plain and entries:
            rows.append({"model": model_label(experiment.meta), "dataset": experiment.meta["dataset"],
                         "entries": entries, "mismatches": mismatches, "mismatch_rate": mismatches / entries * 100.0})
    return sorted(rows, key=lambda r: (name_key(r["model"]), name_key(r["dataset"])))


def _confusion(accuracy: Groups, logs: Logs) -> list[dict]:
    """Per test cell, sorted: its answer space and user -> (gold, answer) -> records
    (analysis.reading.tally.ANSWERS)."""
    spaces = {(model_label(m), m["dataset"]): m.get("answer_space") or [] for m in logs.runs if plain(m)}
    return [{"model": key[0], "dataset": key[1], "strategy": key[2], "space": spaces.get(key[:2], []),
             "users": {user: counts[tally.ANSWERS] for user, counts in accuracy[key].items()}}
            for key in sorted(accuracy, key=key_order)]


def from_logs(logs: Logs) -> Cells:
    accuracy, train, per_user, suggestibility = {}, {}, {}, {}
    offline: dict = {}
    ablations: dict[str, Groups] = {}
    for experiment in logs.experiments:
        meta = experiment.meta
        point = (model_label(meta), meta["dataset"])
        plain, ablation = experiment.plain, meta["ablation"]
        for (stage, strategy, user), counts in experiment.predictions.items():
            if plain and stage == vocab.TEST and strategy is not None:
                _add(accuracy, (*point, strategy), user, counts)
                if meta["kind"] == vocab.PREFERENCE:
                    _add(per_user, (*point, strategy, user), user, counts)
            elif plain and stage == vocab.TRAIN:
                _add(train, point, user, counts)
                _add(offline, point, stage, counts)
            if meta["probe"] == vocab.SUGGESTIBILITY and stage == vocab.PROBE and strategy in (vocab.TRUTH,
                                                                                                vocab.LYING):
                _add(suggestibility, (*point, meta["attribution"], strategy), user, counts)
            if ablation is not None and stage == vocab.TEST and strategy is not None:
                _add(ablations.setdefault(ablation, {}), (*point, strategy, meta["ablation_value"]), user, counts)
        if plain:
            for stage, counts in experiment.calls.items():
                stage = vocab.CRITIQUE if stage == vocab.RECRITIQUE else stage  # a critique's second call
                if stage in COST_STAGES:
                    _add(offline, point, stage, counts)
    ablation_rows = []
    for name in sorted(ablations, key=name_key):
        rows = rates(ablations[name], ["model", "dataset", "strategy", "value"],
                     lambda key: (*key_order(key[:-1]), value_key(key[-1])))
        ablation_rows += _pick([{**row, "ablation": name} for row in rows], "ablations")
    baseline = majority(accuracy, train)
    accuracy_rows = [{**row, "majority": baseline.get((row["model"], row["dataset"])),
                      **cell_interval(accuracy[(row["model"], row["dataset"], row["strategy"])])}
                     for row in rates(accuracy, ["model", "dataset", "strategy"])]
    return Cells(
        accuracy=_pick(accuracy_rows, "accuracy"),
        train=_pick(rates(train, ["model", "dataset"]), "train"),
        per_user=_pick(rates(per_user, ["model", "dataset", "strategy", "user"]), "per_user"),
        tokens=_tokens(accuracy, reasoning_models(logs)),
        costs=_costs(offline, _prices(logs)),
        suggestibility=_suggestibility(suggestibility),
        ablations=ablation_rows,
        source="logs",
        labels={(model_label(m), m["dataset"]): {"model": m["model"], "settings": m["settings"]} for m in logs.runs
                if m["probe"] is None and m["ablation"] is None},
        mismatch=_mismatch(logs),
        confusion=_confusion(accuracy, logs),
    )
