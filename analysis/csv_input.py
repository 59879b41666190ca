"""Per-cell numbers a user already has (e.g. a paper's tables), as CSV -> `Cells`.

results.csv         model,dataset,strategy,accuracy[,tokens_per_question][,timeout_rate]
suggestibility.csv  model,dataset,acc_truth,acc_lying[,attribution]
costs.csv           model,dataset,init_tokens,critique_tokens,summary_tokens

Accuracies and rates are in percent. Rows that carry tokens_per_question are the
reasoning-model rows (Table 3, C3, the break-even of Table 5). A file that cannot be used
is reported in `errors` and left out; bad values are reported in `problems` and left out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import vocab
from analysis.cells import Cells, empty

RESULTS = (("model", "dataset", "strategy", "accuracy"), ("tokens_per_question", "timeout_rate"))
SUGGESTIBILITY = (("model", "dataset", "acc_truth", "acc_lying"), ("attribution",))
COSTS = (("model", "dataset", "init_tokens", "critique_tokens", "summary_tokens"), ())
TEXT = ("model", "dataset", "strategy", "attribution")


def _numbers(frame: pd.DataFrame, column: str, path: Path, problems: list[str]) -> pd.Series:
    text = frame[column].str.strip().str.rstrip("%").str.replace(",", "", regex=False)
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna() & text.fillna("").ne("")
    if bad.any():
        lines = ", ".join(str(i + 2) for i in frame.index[bad][:10])
        problems.append(f"{path}: column {column}: not a number on line(s) {lines}; those values are left out")
    return values


def read_table(path: str | Path, spec: tuple, errors: list[str], problems: list[str]) -> pd.DataFrame | None:
    """The CSV with its required columns (numbers parsed, names stripped), or None when it cannot be used."""
    path = Path(path)
    required, optional = spec
    try:
        frame = pd.read_csv(path, dtype=str, skipinitialspace=True, keep_default_na=False, na_values=[""])
    except FileNotFoundError:
        errors.append(f"{path}: no such file; left out")
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas parser errors are ValueErrors
        errors.append(f"{path}: not a readable CSV ({str(exc).strip().splitlines()[0]}); left out")
        return None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        errors.append(f"{path}: missing column(s) {', '.join(missing)} (needs {','.join(required)}"
                      f"{''.join(f'[,{c}]' for c in optional)}); left out")
        return None
    frame = frame[[c for c in (*required, *optional) if c in frame.columns]].copy()
    for column in frame.columns:
        if column == "strategy":
            frame[column] = frame[column].map(lambda v: v if pd.isna(v) else vocab.canonical_strategy(v))
        elif column in TEXT:
            frame[column] = frame[column].str.strip()
        else:
            frame[column] = _numbers(frame, column, path, problems)
    incomplete = frame[list(required)].isna().any(axis=1)
    if incomplete.any():
        lines = ", ".join(str(i + 2) for i in frame.index[incomplete][:10])
        problems.append(f"{path}: line(s) {lines} lack a value of {', '.join(required)}; those rows are left out")
        frame = frame[~incomplete]
    keys = [c for c in ("model", "dataset", "strategy", "attribution") if c in frame.columns]
    repeated = frame.duplicated(keys, keep="first")
    if repeated.any():
        lines = ", ".join(str(i + 2) for i in frame.index[repeated][:10])
        problems.append(f"{path}: line(s) {lines} repeat a ({', '.join(keys)}) row; the first one is used")
        frame = frame[~repeated]
    if frame.empty:
        errors.append(f"{path}: no usable rows; left out")
        return None
    return frame.reset_index(drop=True)


def _warn_fractions(frame: pd.DataFrame, columns: list[str], path: Path, problems: list[str]) -> None:
    values = frame[columns].to_numpy(dtype=float).ravel()
    if len(values) > 1 and (values <= 1.0).all():
        problems.append(f"{path}: every value of {', '.join(columns)} is <= 1: these must be percent "
                        "(81.2, not 0.812)")


def results_cells(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    for column in RESULTS[1]:
        if column not in frame:
            frame[column] = float("nan")
    frame = frame.assign(parse_fail_rate=float("nan"), n=float("nan"))
    train = frame[frame["strategy"].eq(vocab.TRAIN)]
    test = frame[~frame["strategy"].eq(vocab.TRAIN)]
    accuracy = test[["model", "dataset", "strategy", "accuracy", "timeout_rate", "parse_fail_rate", "n"]]
    tokens = test.dropna(subset=["tokens_per_question"]).assign(reasoning=True)
    tokens = tokens[["model", "dataset", "strategy", "tokens_per_question", "reasoning"]]
    return accuracy.reset_index(drop=True), train[["model", "dataset", "timeout_rate", "parse_fail_rate", "n"]], tokens


def read_cells(results: str | None = None, suggestibility: str | None = None, costs: str | None = None,
               errors: list[str] | None = None, problems: list[str] | None = None) -> Cells:
    """Cells from whichever CSV files are given and usable; the others stay empty."""
    errors = [] if errors is None else errors
    problems = [] if problems is None else problems
    cells = Cells(*(empty(name) for name in ("accuracy", "train", "per_user", "tokens", "costs",
                                             "suggestibility", "ablations")), source="csv")
    if results:
        frame = read_table(results, RESULTS, errors, problems)
        if frame is not None:
            _warn_fractions(frame, ["accuracy"], Path(results), problems)
            cells.accuracy, cells.train, cells.tokens = results_cells(frame)
    if suggestibility:
        frame = read_table(suggestibility, SUGGESTIBILITY, errors, problems)
        if frame is not None:
            _warn_fractions(frame, ["acc_truth", "acc_lying"], Path(suggestibility), problems)
            if "attribution" not in frame:
                frame["attribution"] = None
            cells.suggestibility = frame.assign(n=float("nan"))[list(empty("suggestibility").columns)]
    if costs:
        frame = read_table(costs, COSTS, errors, problems)
        if frame is not None:
            cells.costs = frame[list(empty("costs").columns)]
    return cells
