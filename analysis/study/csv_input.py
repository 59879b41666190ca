"""Per-cell numbers a user already has (e.g. a paper's tables), as CSV -> `Cells`.

results.csv         model,dataset,strategy,accuracy[,tokens_per_question][,timeout_rate]
suggestibility.csv  model,dataset,acc_truth,acc_lying[,attribution]
costs.csv           model,dataset,init_tokens,critique_tokens,summary_tokens

Accuracies and rates are in percent. Rows that carry tokens_per_question are the
reasoning-model rows (Table 3, C3, the break-even of Table 5). A file that cannot be used
is reported in `errors` and left out; bad values are reported in `problems` and left out.
Line numbers are the file's own (the header is line 1).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from critique.base import vocab
from critique.analysis.study.cells import COLUMNS, Cells

RESULTS = (("model", "dataset", "strategy", "accuracy"), ("tokens_per_question", "timeout_rate"))
SUGGESTIBILITY = (("model", "dataset", "acc_truth", "acc_lying"), ("attribution",))
COSTS = (("model", "dataset", "init_tokens", "critique_tokens", "summary_tokens"), ())
TEXT = ("model", "dataset", "strategy", "attribution")
# The range of each number column: percentages in [0, 100], counts of tokens never negative.
PERCENT = ("accuracy", "timeout_rate", "acc_truth", "acc_lying")
COUNTS = ("tokens_per_question", "init_tokens", "critique_tokens", "summary_tokens")


def _lines(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:10]))


def _number(text: str) -> int | float | None:
    """The number in a cell ('81', '81.2', '81.2%', '1,024'), or None when it is not a finite one."""
    text = text.strip().rstrip("%").replace(",", "")
    if not text.isascii() or "_" in text:
        return None  # int() and float() would take '1_000' and other scripts' digits
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _parse(path: Path, errors: list[str]) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """The header and the (line number, cells) of every record that is not a blank line (trailing
    empty cells dropped), or None (reported)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, skipinitialspace=True)
            header = next(reader, None)
            records = [(reader.line_num, _trimmed(row)) for row in reader if len(row) > 1 or row and row[0].strip()]
    except FileNotFoundError:
        errors.append(f"{path}: no such file; left out")
        return None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        errors.append(f"{path}: not a readable CSV ({str(exc).strip().splitlines()[0]}); left out")
        return None
    if header is None:
        errors.append(f"{path}: not a readable CSV (the file is empty); left out")
        return None
    header = [c.strip().lower() for c in _trimmed(header)]
    longer = [line for line, row in records if len(row) > len(header)]
    if longer:
        errors.append(f"{path}: not a readable CSV (more cells than the header has columns on line(s) "
                      f"{_lines(longer)}); left out")
        return None
    return header, records


def _trimmed(row: list[str]) -> list[str]:
    """The row without its trailing empty cells (a spreadsheet's export may add them)."""
    end = len(row)
    while end and not row[end - 1].strip():
        end -= 1
    return row[:end]


def read_table(path: str | Path, spec: tuple, errors: list[str], problems: list[str]) -> list[dict] | None:
    """The CSV's rows with its required columns (numbers parsed, names stripped, None where a cell is
    empty or bad), or None when it cannot be used."""
    path = Path(path)
    required, optional = spec
    parsed = _parse(path, errors)
    if parsed is None:
        return None
    header, records = parsed
    missing = [c for c in required if c not in header]
    if missing:
        errors.append(f"{path}: missing column(s) {', '.join(missing)} (needs {','.join(required)}"
                      f"{''.join(f'[,{c}]' for c in optional)}); left out")
        return None
    columns = [c for c in (*required, *optional) if c in header]
    where = {c: header.index(c) for c in columns}
    bad: dict[str, list[int]] = {}
    outside: dict[str, list[int]] = {}
    rows = []
    for line, cells in records:
        row = {"line": line}
        for column in columns:
            text = cells[where[column]].strip() if where[column] < len(cells) else ""
            if not text:
                row[column] = None
            elif column == "strategy":
                row[column] = vocab.canonical_strategy(text)
            elif column in TEXT:
                row[column] = text
            else:
                row[column] = _number(text)
                if row[column] is None:
                    bad.setdefault(column, []).append(line)
                elif _out_of_range(column, row[column]):
                    row[column] = None
                    outside.setdefault(column, []).append(line)
        rows.append(row)
    for column, lines in bad.items():
        problems.append(f"{path}: column {column}: not a number on line(s) {_lines(lines)}; those values are left out")
    for column, lines in outside.items():
        what = "a percent in [0, 100]" if column in PERCENT else "a count of 0 or more"
        problems.append(f"{path}: column {column}: not {what} on line(s) {_lines(lines)}; those values are left out")
    incomplete = [r["line"] for r in rows if any(r[c] is None for c in required)]
    if incomplete:
        problems.append(f"{path}: line(s) {_lines(incomplete)} lack a value of {', '.join(required)}; those rows "
                        "are left out")
        rows = [r for r in rows if all(r[c] is not None for c in required)]
    keys = [c for c in ("model", "dataset", "strategy", "attribution") if c in columns]
    seen, unique, repeated = set(), [], []
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key in seen:
            repeated.append(row["line"])
        else:
            seen.add(key)
            unique.append(row)
    if repeated:
        problems.append(f"{path}: line(s) {_lines(repeated)} repeat a ({', '.join(keys)}) row; the first one is used")
    if not unique:
        errors.append(f"{path}: no usable rows; left out")
        return None
    return unique


def _out_of_range(column: str, value: float) -> bool:
    return (column in PERCENT and not 0 <= value <= 100) or (column in COUNTS and value < 0)


def _warn_fractions(rows: list[dict], columns: list[str], path: Path, problems: list[str]) -> None:
    values = [row[c] for row in rows for c in columns]
    if len(values) > 1 and all(v is not None and v <= 1.0 for v in values):
        problems.append(f"{path}: every value of {', '.join(columns)} is <= 1: these must be percent "
                        "(81.2, not 0.812)")


def _cells(rows: list[dict], name: str, **values) -> list[dict]:
    return [{c: values[c] if c in values else row.get(c) for c in COLUMNS[name]} for row in rows]


def results_cells(rows: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    train = [r for r in rows if r["strategy"] == vocab.TRAIN]
    test = [r for r in rows if r["strategy"] != vocab.TRAIN]
    tokens = [r for r in test if r.get("tokens_per_question") is not None]
    return _cells(test, "accuracy"), _cells(train, "train"), _cells(tokens, "tokens", reasoning=True)


def read_cells(results: str | None = None, suggestibility: str | None = None, costs: str | None = None,
               errors: list[str] | None = None, problems: list[str] | None = None) -> Cells:
    """Cells from whichever CSV files are given and usable; the others stay empty."""
    errors = [] if errors is None else errors
    problems = [] if problems is None else problems
    cells = Cells([], [], [], [], [], [], [], source="csv")
    if results:
        rows = read_table(results, RESULTS, errors, problems)
        if rows is not None:
            _warn_fractions(rows, ["accuracy"], Path(results), problems)
            cells.accuracy, cells.train, cells.tokens = results_cells(rows)
    if suggestibility:
        rows = read_table(suggestibility, SUGGESTIBILITY, errors, problems)
        if rows is not None:
            _warn_fractions(rows, ["acc_truth", "acc_lying"], Path(suggestibility), problems)
            cells.suggestibility = _cells(rows, "suggestibility")
    if costs:
        rows = read_table(costs, COSTS, errors, problems)
        if rows is not None:
            cells.costs = _cells(rows, "costs")
    return cells
