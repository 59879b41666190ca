"""Table 1 alone, with pandas and pyarrow: the yardstick that bench/bench_tables.py times `critique tables` against.

For every run directory below FOLDER that is a plain run (its manifest names no probe and no
ablation): pyarrow reads the columns Table 1 needs from its predictions.jsonl, the test stage's
latest record of each item is kept (a rerun's replaces a failed one), and each (model, dataset,
strategy) cell's accuracy is the percent correct per user, then the mean over users (data without
users is one user). Prints the cells as one table, a row per model and dataset.

    .venv/bin/python bench/table1_pandas.py FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.json as pj

COLUMNS = pa.schema([("stage", pa.string()), ("strategy", pa.string()), ("user", pa.string()),
                     ("item_id", pa.string()), ("correct", pa.bool_())])
OPTIONS = pj.ParseOptions(explicit_schema=COLUMNS, unexpected_field_behavior="ignore")
STRATEGIES = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]


def plain_runs(folder: Path):
    """(run directory, model, dataset) of each plain run below ``folder``."""
    for path in sorted(folder.rglob("manifest.json")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("probe") is None and manifest.get("ablation") is None:
            yield path.parent, manifest["config"]["model"], manifest["dataset"]["name"]


def test_predictions(folder: Path) -> pd.DataFrame:
    parts = []
    for run, model, dataset in plain_runs(folder):
        frame = pj.read_json(run / "predictions.jsonl", parse_options=OPTIONS).to_pandas()
        frame = frame[frame["stage"] == "test"]
        frame = frame.drop_duplicates(["strategy", "user", "item_id"], keep="last")
        parts.append(frame.assign(model=model, dataset=dataset))
    return pd.concat(parts, ignore_index=True)


def table1(predictions: pd.DataFrame) -> pd.DataFrame:
    predictions = predictions.assign(user=predictions["user"].fillna(""),
                                     correct=predictions["correct"].fillna(False).astype(float) * 100.0)
    per_user = predictions.groupby(["model", "dataset", "strategy", "user"])["correct"].mean()
    cells = per_user.groupby(["model", "dataset", "strategy"]).mean().unstack("strategy")
    return cells[[s for s in STRATEGIES if s in cells.columns]]


def main() -> int:
    cells = table1(test_predictions(Path(sys.argv[1])))
    print(cells.round(1).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
