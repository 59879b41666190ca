"""What every table is made of: its shape (long rows, a wide view, or skipped), the study's
titles, the order of strategies, and the marks that keep errors in sight."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from critique.base import vocab
from critique.analysis.study.cells import name_key


TITLES = {
    "table1": "Table 1. Accuracy (%) per model x dataset x strategy",
    "table2": "Table 2. Gain (points) of each critique strategy over each baseline, pooled over (model, dataset)",
    "table3": "Table 3. Output tokens per test question (reasoning included), and prompt tokens, reasoning models",
    "table4": "Table 4. Suggestibility: accuracy (%) with a truthful / a lying critique, S = truth - lying",
    "table5_costs": "Table 5a. Offline cost: completion (and prompt) tokens of the training stage",
    "table5": "Table 5b. Break-even number of test queries versus EP_LABEL (reasoning models)",
    "table6": "Table 6. Train-size ablation: accuracy (%)",
    "table7": "Table 7. Critique-parts ablation: accuracy (%)",
    "table8": "Table 8. K ablation: accuracy (%)",
    "table9": "Table 9. Timeout rate (%) per model x dataset x strategy (train_predict: the train stage)",
    "table10": "Table 10. Per-user accuracy (%), preference datasets",
    "table11": "Table 11. Accuracy (%) over users, preference datasets: mean and SD",
    "mismatch": "Critiques whose assertion contradicts the gold label, per model x dataset",
    "answers": "Answers per model x dataset x strategy: what each answered, macro-F1 and per-class accuracy (%)",
    "references": "Published reference numbers beside ours (accuracy %, never pooled)",
    "comparison": "Comparison of Table 1 with the published numbers (points)",
    "claims_comparison": "Headline claims: logs versus published numbers",
}
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
    formats: dict = field(default_factory=dict)  # column -> number format, where the column's usual one misleads


def plain_value(value):
    """A JSON-ready scalar: NaN -> None."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(rows: list[dict], columns: list[str]) -> list[dict]:
    return [{c: plain_value(row.get(c)) for c in columns} for row in rows]


def strategy_order(names) -> list[str]:
    names = list(dict.fromkeys(names))
    known = [s for s in (vocab.TRAIN, *vocab.STRATEGIES, vocab.MANY_SHOT) if s in names]  # then the field's methods
    return known + sorted((n for n in names if n not in known), key=name_key)


def sort_strategies(rows: list[dict], keys: list[str]) -> list[dict]:
    """Sorted by `keys`, then strategies in the study's order (stable)."""
    order = {name: i for i, name in enumerate(strategy_order(r["strategy"] for r in rows))}
    return sorted(rows, key=lambda r: (*(name_key(r[k]) for k in keys), order[r["strategy"]]))


def wide_view(rows: list[dict], index: list[str], column: str, value: str, order: list,
              labels: dict | None = None) -> tuple[list[str], list[dict]]:
    """One row per `index` (in the rows' order), one column per value of `column` (in `order`)."""
    labels = labels or {}
    table: dict[tuple, dict] = {}
    for row in rows:
        table.setdefault(tuple(row[k] for k in index), {})[row[column]] = row[value]
    present = [o for o in order if any(o in cells for cells in table.values())]
    columns = index + [labels.get(o, str(o)) for o in present]
    return columns, [dict(zip(columns, [*key, *(plain_value(cells.get(o)) for o in present)]))
                     for key, cells in table.items()]


ERROR_NOTE = ("a cell marked (N err) holds N predictions that ended in an error (a failed call, a missing memory), "
              "not an answer of the model; they count wrong in its accuracy")


def flagged(rows: list[dict]) -> list[dict]:
    """The rows with `flagged` (JSON): true where some prediction ended in an error."""
    return [{**r, "flagged": bool(r.get("errors"))} for r in rows]


def with_errors(view_rows: list[dict], rows: list[dict], index: list[str], column: str, labels: dict | None = None,
                count: str = "errors", word: str = "err") -> list[dict]:
    """The wide view's cells of rows with errors, written "33.3 (5 err)" so that no reader takes
    them for the model's answers (`count`, `word`: another count to show so, e.g. overflows)."""
    labels = labels or {}
    counts = {(*(r[k] for k in index), labels.get(r[column], str(r[column]))): r.get(count) for r in rows}
    out = []
    for view in view_rows:
        view = dict(view)
        for name, value in view.items():
            found = counts.get((*(view[k] for k in index), name))
            if found and value is not None:
                view[name] = f"{value:.1f} ({found} {word})" if isinstance(value, (int, float)) else \
                    f"{value} ({found} {word})"
        out.append(view)
    return out


def n_view(rows: list[dict], index: list[str]) -> dict[tuple, object]:
    """index -> n of its cells: one number, or "low-high" when its cells differ."""
    found: dict[tuple, set] = {}
    for r in rows:
        found.setdefault(tuple(r[k] for k in index), set()).add(r.get("n"))
    return {key: (next(iter(ns)) if len(ns) == 1 else f"{min(ns)}-{max(ns)}") for key, ns in found.items()
            if None not in ns}


def skip(key: str, why: str) -> Table:
    return Table(key, TITLES[key], skipped=why)
