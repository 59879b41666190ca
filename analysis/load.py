"""Run directories -> pandas frames: one row per prediction and one per call.

Every row carries its run's identity (model, dataset, kind) and what the run was (probe,
attribution, ablation, ablation_value; None for a plain run), so `analysis.cells` only
filters and groups. Inputs that cannot be read are in `Logs.errors` (left out); warnings
(a cut last line, an unfinished run, repeated records) are in `Logs.problems`.
Calls are read for plain runs only, and only those without a prediction (critiques, summaries):
a prediction carries its call's tokens, and no table uses the calls of a probe or an ablation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import read
from analysis.jsonl import factorize

RUN_COLUMNS = ["run", "model", "dataset", "kind", "probe", "attribution", "ablation", "ablation_value"]
EXPERIMENT = ["model", "dataset", "probe", "attribution", "ablation", "ablation_value"]  # runs that may overlap
ITEM = ["stage", "strategy", "user", "item_id"]


@dataclass
class Logs:
    runs: pd.DataFrame
    predictions: pd.DataFrame
    calls: pd.DataFrame
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


FLAGS = ("correct", "timeout", "parse_failed")  # 1.0 when the record says true; false, null or absent: 0.0
ERRORS = ("error",)  # 1.0 when the record carries an error
NUMBERS = ("completion_tokens", "reasoning_tokens")  # float; NaN when null or absent


def _flag(value) -> float:
    return 1.0 if value is True else 0.0


def _failed(value) -> float:
    return 0.0 if value is None or value == "" else 1.0


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")


def _label(value):
    """A category: None (and NaN) stay missing; anything unhashable becomes its text."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, (str, int, float)) else str(value)


def _numeric(columns: list, sizes: list[int], convert) -> np.ndarray:
    """One float array from per-run factorised columns (None where a run lacks the field)."""
    parts = []
    for column, size in zip(columns, sizes):
        if column is None or not column[0]:
            parts.append(np.full(size, convert(None), dtype=float))
            continue
        values, codes = column
        parts.append(np.array([convert(v) for v in values], dtype=float)[np.frombuffer(codes, dtype=np.int32)])
    return np.concatenate(parts) if parts else np.empty(0)


def _categorical(columns: list, sizes: list[int], default=None) -> pd.Categorical:
    """One categorical from per-run factorised columns (None, or `default`, where a value is missing)."""
    categories: dict = {}

    def code(value) -> int:
        value = default if value is None else _label(value)
        return -1 if value is None else categories.setdefault(value, len(categories))

    parts = []
    for column, size in zip(columns, sizes):
        if column is None or not column[0]:
            parts.append(np.full(size, code(None), dtype=np.int64))
            continue
        values, codes = column
        parts.append(np.array([code(v) for v in values], dtype=np.int64)[np.frombuffer(codes, dtype=np.int32)])
    codes = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return pd.Categorical.from_codes(codes, categories=pd.Index(list(categories), dtype=object))


def frame(packed_per_run: list[dict], fields: tuple[str, ...], runs: pd.DataFrame) -> pd.DataFrame:
    """One row per record, with its run's identity; text columns are categorical.

    A field a run was not read for (item ids, see read.read_records) is None.
    """
    sizes = [len(np.frombuffer(next(iter(p.values()))[1], dtype=np.int32)) if p else 0 for p in packed_per_run]
    run = np.repeat(np.arange(len(packed_per_run)), sizes)
    data: dict = {"run": run}
    for field in fields:
        columns = [p.get(field) for p in packed_per_run]
        if field in FLAGS:
            data[field] = _numeric(columns, sizes, _flag)
        elif field in NUMBERS:
            data[field] = _numeric(columns, sizes, _number)
        elif field in ERRORS:
            data[field] = _numeric(columns, sizes, _failed)
        else:
            data[field] = _categorical(columns, sizes, "" if field == "user" else None)
    for column in RUN_COLUMNS[1:]:
        if column == "ablation_value":  # numbers or text: kept as objects
            data[column] = runs[column].to_numpy(dtype=object)[run]
        else:
            per_run = _categorical([factorize(list(runs[column]))], [len(runs)])
            data[column] = pd.Categorical.from_codes(per_run.codes[run], categories=per_run.categories)
    return pd.DataFrame(data)


def repeated_runs(runs: pd.DataFrame) -> pd.Series:
    """Runs whose experiment (see EXPERIMENT) another run also did."""
    keys = [tuple(map(str, row)) for row in runs[EXPERIMENT].itertuples(index=False)]
    counts = Counter(keys)
    return pd.Series([counts[k] > 1 for k in keys], index=runs.index, dtype=bool)


def latest(records: pd.DataFrame, runs: pd.DataFrame, problems: list[str], what: str,
           within_runs: bool) -> pd.DataFrame:
    """The final record per (experiment, stage, strategy, user, item).

    Runs are numbered in start order. Within a run a later record replaces an earlier one
    (a rerun after a failed call; `within_runs`); across runs of one experiment the later
    run's records replace the earlier run's.
    """
    if records.empty:
        return records
    drop = pd.Series(False, index=records.index)
    if within_runs:
        drop |= records.duplicated(["run", *ITEM], keep="last")
    shared = records["run"].isin(runs.loc[repeated_runs(runs), "run"])
    if shared.any():
        part = records[shared]
        newest = part.groupby([*EXPERIMENT, *ITEM], dropna=False, observed=True)["run"].transform("max")
        older = part["run"].lt(newest)
        drop.loc[part.index] |= older
        if older.any():
            problems.append(f"{int(older.sum())} {what} records repeat an item that a later run of the same "
                            "experiment also has; the later run's records are used")
    return records[~drop].reset_index(drop=True)


def frames(pending: read.Pending) -> Logs:
    """Wait for the records of `pending` and turn them into frames."""
    records = pending.records()
    problems, errors = list(pending.problems), list(pending.errors)
    for _, _, run_problems, run_errors in records:
        problems.extend(run_problems)
        errors.extend(run_errors)
    runs = pd.DataFrame([{k: v for k, v in m.items() if k != "templates"} for m in pending.metas],
                        columns=["path", *RUN_COLUMNS[1:], "reasoning_declared", "status", "started", "log_version"])
    runs.insert(0, "run", range(len(runs)))
    runs["ablation_value"] = pd.Series([m["ablation_value"] for m in pending.metas], dtype=object)  # 3 stays 3
    predictions = frame([r[0] for r in records], read.PREDICTION_FIELDS, runs)
    calls = frame([r[1] for r in records], read.CALL_FIELDS, runs)
    predictions = latest(predictions, runs, problems, "prediction", within_runs=True)
    calls = calls[calls["error"].eq(0.0)]  # a failed call answered nothing; its rerun has its own record
    calls = latest(calls, runs, problems, "call", within_runs=False)
    return Logs(runs, predictions, calls, problems, errors)


def load(paths: list[str], allow_mixed: bool = False, workers: int | None = None) -> Logs:
    """Read every run directory among `paths` (folders of runs count as their runs)."""
    return frames(read.start(paths, allow_mixed, workers))
