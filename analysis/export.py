"""`critique export RUN_DIR... --to OUT/ [--format csv|parquet]`: the records of run directories as
tables (analysis.reading.frames): predictions, calls and memory, one file each, one row per logged
record. The calls table, which holds every prompt and reply, is written to CSV a part at a time
(`Logs.call_chunks`), so its size in memory does not grow with the logs.

CSV holds lists and objects as JSON text; Parquet keeps lists as lists and holds objects as JSON text. In the
columns a reader groups by (GROUPING: variant, probe, ..., user) "none" is written "-", never an empty cell
that pandas would read back as NaN and a grouping would leave out. Parquet needs pyarrow, which critique does not
require (`pip install pyarrow`). Secret values are redacted before anything is encoded; every
file is written whole or not at all (critique.base.rundir)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

EXPORT_HELP = "write the predictions, calls and memory entries of run directories as CSV or Parquet tables"
TABLES = ("predictions", "calls", "memory")


def register(sub) -> None:
    parser = sub.add_parser("export", help=EXPORT_HELP, description=EXPORT_HELP)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="run directories, or folders with run directories below them")
    parser.add_argument("--to", required=True, metavar="FOLDER", help="where the tables are written")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv")
    parser.add_argument("--tables", default=",".join(TABLES), metavar="NAMES",
                        help=f"which tables, comma-separated (default: {','.join(TABLES)})")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="group runs of one model and dataset even when their prompt templates differ")
    parser.set_defaults(func=run_export)


def _user_error(message: str) -> Exception:
    from critique.base.errors import UserError

    return UserError(message)


# The columns a reader groups by: "" or null there is written NONE, which pandas reads back as text (it reads an
# empty CSV cell as NaN, and groupby leaves NaN keys out: a plain run's rows would vanish from a grouping by user).
GROUPING = ("variant", "probe", "attribution", "ablation", "ablation_value", "stage", "strategy", "user")
NONE = "-"


def _json_cells(frame, kinds=(list, dict)):
    """Cells of ``kinds`` as JSON text: lists and objects for CSV (it has no such cells), objects for Parquet (it
    keeps lists as lists)."""
    import json

    frame = frame.copy()
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, kinds)).any():
            frame[column] = frame[column].map(
                lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, kinds) else v)
    return frame


def _grouping_named(frame):
    """The grouping columns with NONE for "" and null (GROUPING)."""
    frame = frame.copy()
    for column in GROUPING:
        if column in frame.columns:
            frame[column] = frame[column].map(lambda v: NONE if v is None or v == "" or v != v else v)
    return frame


def _redacted(frame):
    from pandas.api.types import is_object_dtype, is_string_dtype

    from critique.base.rundir import redact_value, secret_values

    secrets = secret_values()
    if not secrets:
        return frame
    frame = frame.copy()
    for column in frame.columns:
        if is_object_dtype(frame[column]) or is_string_dtype(frame[column]):
            frame[column] = frame[column].map(lambda value: redact_value(value, secrets))
    return frame


def write_csv_chunks(chunks, columns: list[str], path: Path) -> int:
    """Write the frames ``chunks`` as one CSV table with ``columns`` (a part's missing ones empty), a part at a
    time (redacted by the writer); returns the rows written."""
    import pandas as pd

    from critique.base.rundir import write_text_chunks_atomic

    rows = [0]

    def texts():
        yield pd.DataFrame(columns=columns).to_csv(index=False)
        for frame in chunks:
            rows[0] += len(frame)
            yield _json_cells(_grouping_named(frame.reindex(columns=columns))).to_csv(index=False, header=False)

    write_text_chunks_atomic(path, texts())
    return rows[0]


def write_table(frame, path: Path, form: str) -> None:
    from critique.base.rundir import write_bytes_atomic, write_text_atomic

    frame = _grouping_named(frame)
    if form == "csv":
        write_text_atomic(path, _json_cells(frame).to_csv(index=False))  # redacted by the writer
        return
    buffer = io.BytesIO()
    _json_cells(_redacted(frame), kinds=dict).to_parquet(buffer, index=False)
    write_bytes_atomic(path, buffer.getvalue())


def run_export(args) -> int:
    chosen = [t.strip() for t in args.tables.split(",") if t.strip()]
    unknown = sorted(set(chosen) - set(TABLES))
    if unknown or not chosen:
        raise _user_error(f"--tables: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(TABLES)}")
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise _user_error("--format parquet needs pyarrow, which is not installed (pip install pyarrow), "
                              "or use --format csv") from None
    from critique.analysis.reading import frames

    logs = frames.load(args.runs, allow_mixed=args.allow_mixed, learners=True)  # a fit's records too
    if not logs.metas:
        raise _user_error("no readable run directory among the inputs: " + "; ".join(logs.errors or logs.problems))
    # the calls (every prompt and reply: most of the bytes) go to CSV a part at a time; the rest is read first
    streamed = "calls" if "calls" in chosen and args.format == "csv" else None
    columns = logs.call_columns() if streamed else None
    tables = {name: getattr(logs, name)() for name in chosen if name != streamed}
    for line in logs.problems:
        print(f"critique: warning: {line}", file=sys.stderr)
    for line in logs.errors:
        print(f"critique: error: {line}", file=sys.stderr)
    out = Path(args.to)
    for name in chosen:
        path = out / f"{name}.{args.format}"
        if name == streamed:
            rows = write_csv_chunks(logs.call_chunks(), columns, path)
        else:
            write_table(tables[name], path, args.format)
            rows = len(tables[name])
        print(f"critique: wrote {path} ({rows:,} rows) from {len(logs.metas)} run directories", file=sys.stderr)
    return 1 if logs.errors else 0
