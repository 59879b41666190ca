"""Per-cell numbers (model x dataset x strategy, ...) that every table is built from.

`Cells` is the one shape both inputs produce: `from_logs` (run directories) and
`analysis.csv_input` (per-cell numbers a user already has). Rates are in percent.
For preference data a rate is computed per user, then averaged over users.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import vocab
from analysis.load import Logs

COLUMNS = {
    "accuracy": ["model", "dataset", "strategy", "accuracy", "timeout_rate", "parse_fail_rate", "n"],
    "train": ["model", "dataset", "timeout_rate", "parse_fail_rate", "n"],
    "per_user": ["model", "dataset", "strategy", "user", "accuracy", "n"],
    "tokens": ["model", "dataset", "strategy", "tokens_per_question", "reasoning"],
    "costs": ["model", "dataset", "init_tokens", "critique_tokens", "summary_tokens"],
    "suggestibility": ["model", "dataset", "attribution", "acc_truth", "acc_lying", "n"],
    "ablations": ["ablation", "model", "dataset", "strategy", "value", "accuracy", "n"],
}
COST_STAGES = {vocab.TRAIN: "init_tokens", vocab.CRITIQUE: "critique_tokens", vocab.SUMMARY: "summary_tokens"}


@dataclass
class Cells:
    accuracy: pd.DataFrame  # test stage of plain runs
    train: pd.DataFrame  # train_predict stage of plain runs
    per_user: pd.DataFrame  # preference datasets only
    tokens: pd.DataFrame  # mean completion tokens (reasoning included) per answered test question
    costs: pd.DataFrame  # total completion tokens of the offline stages
    suggestibility: pd.DataFrame  # accuracy with a truthful / a lying critique in context
    ablations: pd.DataFrame  # test accuracy of ablation runs, by ablation name and value
    source: str = "logs"


def empty(name: str) -> pd.DataFrame:
    return pd.DataFrame(columns=COLUMNS[name])


def rates(predictions: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Accuracy, timeout and parse-failure rates (%) per `keys`: per user first, then the mean over users.

    The flag columns hold 1.0 for true (see analysis.load), so a missing answer counts as wrong.
    """
    columns = keys + ["accuracy", "timeout_rate", "parse_fail_rate", "n", "users"]
    if predictions.empty:
        return pd.DataFrame(columns=columns)
    by_user = keys if "user" in keys else keys + ["user"]
    grouped = predictions.groupby(by_user, dropna=False, observed=True, sort=False)
    per_user = grouped[["correct", "timeout", "parse_failed"]].mean() * 100.0
    per_user["n"] = grouped.size()
    over_users = per_user.groupby(level=keys, dropna=False, observed=True, sort=True)
    out = over_users[["correct", "timeout", "parse_failed"]].mean()
    out.columns = ["accuracy", "timeout_rate", "parse_fail_rate"]
    out["n"], out["users"] = over_users["n"].sum(), over_users.size()
    return plain_keys(out.reset_index(), keys)[columns]


def plain_keys(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Key columns as plain objects (the frames of analysis.load hold them as categoricals)."""
    return frame.assign(**{k: frame[k].astype(object).where(frame[k].notna(), None) for k in keys})


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Records of ordinary runs (no probe, no ablation)."""
    return frame[frame["probe"].isna() & frame["ablation"].isna()]


def stages(predictions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The test-stage records (with a strategy) and the train-stage records of plain runs."""
    ordinary = plain(predictions)
    stage = ordinary["stage"]
    return ordinary[stage.eq(vocab.TEST) & ordinary["strategy"].notna()], ordinary[stage.eq(vocab.TRAIN)]


def accuracy_cells(test: pd.DataFrame) -> pd.DataFrame:
    return rates(test, ["model", "dataset", "strategy"])[COLUMNS["accuracy"]]


def train_cells(train: pd.DataFrame) -> pd.DataFrame:
    return rates(train, ["model", "dataset"])[COLUMNS["train"]]


def per_user_cells(test: pd.DataFrame) -> pd.DataFrame:
    test = test[test["kind"].eq(vocab.PREFERENCE)]
    return rates(test, ["model", "dataset", "strategy", "user"])[COLUMNS["per_user"]]


def answered(frame: pd.DataFrame) -> pd.DataFrame:
    """The records whose call answered (no error): they carry the call's tokens."""
    return frame[frame["error"].eq(0.0)]


def reasoning_models(logs: Logs) -> set[str]:
    """Models whose calls report reasoning tokens, or whose runs declare them reasoning models."""
    reported = set()
    for frame in (logs.predictions, logs.calls):
        reported |= set(frame.loc[frame["reasoning_tokens"].gt(0), "model"])
    declared = set(logs.runs.loc[logs.runs["reasoning_declared"].eq(True), "model"])
    return reported | declared


def token_cells(test: pd.DataFrame, logs: Logs) -> pd.DataFrame:
    test = answered(test)
    test = test.assign(tokens=test["completion_tokens"])
    out = test.groupby(["model", "dataset", "strategy"], observed=True, sort=True)["tokens"].mean().reset_index()
    out = plain_keys(out, ["model", "dataset", "strategy"])
    out = out.rename(columns={"tokens": "tokens_per_question"}).dropna(subset=["tokens_per_question"])
    out["reasoning"] = out["model"].isin(reasoning_models(logs))
    return out[COLUMNS["tokens"]]


def cost_cells(train: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Completion tokens of the offline stages: initial answers (from their predictions), critiques and
    the summary (from the calls of plain runs)."""
    columns = ["model", "dataset", "stage", "completion_tokens"]
    offline = pd.concat([answered(train).loc[:, columns].astype(object),
                         answered(plain(calls)).loc[:, columns].astype(object)], ignore_index=True)
    offline = offline[offline["stage"].isin(list(COST_STAGES))]
    if offline.empty:
        return empty("costs")
    offline = offline.assign(tokens=offline["completion_tokens"].astype(float))
    sums = offline.groupby(["model", "dataset", "stage"], observed=True, sort=True)["tokens"].sum(min_count=1)
    sums = plain_keys(sums.reset_index(), ["model", "dataset", "stage"])
    out = sums.pivot(index=["model", "dataset"], columns="stage", values="tokens").rename(columns=COST_STAGES)
    out = out.reset_index()
    out.columns.name = None
    for column in COST_STAGES.values():
        if column not in out:
            out[column] = float("nan")
    return out[COLUMNS["costs"]]


def suggestibility_cells(predictions: pd.DataFrame) -> pd.DataFrame:
    probe = predictions[predictions["probe"].eq(vocab.SUGGESTIBILITY) & predictions["stage"].eq(vocab.PROBE)
                        & predictions["strategy"].isin([vocab.TRUTH, vocab.LYING])]
    if probe.empty:
        return empty("suggestibility")
    cells = rates(probe, ["model", "dataset", "attribution", "strategy"])
    wide = cells.set_index(["model", "dataset", "attribution", "strategy"])[["accuracy", "n"]].unstack("strategy")
    out = pd.DataFrame({
        "acc_truth": wide.get(("accuracy", vocab.TRUTH)),
        "acc_lying": wide.get(("accuracy", vocab.LYING)),
        "n": wide.get(("n", vocab.TRUTH)),
    }, index=wide.index).reset_index()
    return out[COLUMNS["suggestibility"]]


def ablation_cells(predictions: pd.DataFrame) -> pd.DataFrame:
    runs = predictions[predictions["ablation"].notna() & predictions["stage"].eq(vocab.TEST)
                       & predictions["strategy"].notna()]
    frames = []
    for name, group in runs.groupby("ablation", observed=True, sort=True):
        cells = rates(group.assign(value=group["ablation_value"]), ["model", "dataset", "strategy", "value"])
        frames.append(cells.assign(ablation=name))
    if not frames:
        return empty("ablations")
    return pd.concat(frames, ignore_index=True)[COLUMNS["ablations"]]


def from_logs(logs: Logs) -> Cells:
    predictions = logs.predictions
    test, train = stages(predictions)
    return Cells(
        accuracy=accuracy_cells(test),
        train=train_cells(train),
        per_user=per_user_cells(test),
        tokens=token_cells(test, logs),
        costs=cost_cells(train, logs.calls),
        suggestibility=suggestibility_cells(predictions),
        ablations=ablation_cells(predictions),
        source="logs",
    )
