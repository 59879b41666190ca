"""`--mlflow [TRACKING_URI]`: each run directory as one MLflow run (the `mlflow` extra).

The MLflow run of a run directory is found by its tags `critique.run_dir` (the folder's absolute path) and
`critique.run_id` (its manifest's run id, which a resumed run keeps), so logging a run directory again, after it
was resumed or unchanged, adds to the same MLflow run and never makes a second one, while a folder reused for
another run (another model, another dataset) gets an MLflow run of its own: one MLflow run never holds the params
of one run and the metrics of another. A run directory whose logs are unchanged since it was last logged (the tag
`critique.logged`: its manifest and the sizes of its logs) is left as it is. What is logged:

- params: the run's settings that make its identity (critique.base.config.IDENTITY, default values too), its
  dataset and strategies, and each field of its probe or ablation (`probe.feedback`);
- metrics: for every run directory, the accuracy and count of its final predictions per stage and strategy
  (`predictions/test/EP_CRIT/accuracy`, `predictions/stream/EP_CRIT/n`); every number of the study's tables that
  these logs fill, as `<table>/<column>/<strategy>` (Table 1's accuracy and interval per strategy, tokens and
  costs, the methods table), and the headline claims (`claims/C1/vs_zero_shot`, ...);
- artifacts: the manifest, the memory folder and the HTML report of the run directory.

The store is --mlflow's TRACKING_URI, else $MLFLOW_TRACKING_URI, else the SQLite database mlflow.db in the working
folder (MLflow 3 keeps its plain-folder file store in maintenance mode and refuses it without
MLFLOW_ALLOW_FILE_STORE=true); a SQLite store needs SQLAlchemy and Alembic, which mlflow-skinny leaves out. A store
that refuses or cannot be written is one line. The experiment is $MLFLOW_EXPERIMENT_NAME, else "critique". Nothing
here calls a model.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from critique.analysis.reading import logs
from critique.base import rundir
from critique.base.config import IDENTITY, manifest_value
from critique.base.distribution import install

RUN_TAG = "critique.run_dir"
RUN_ID_TAG = "critique.run_id"
LOGGED_TAG = "critique.logged"
DEFAULT_EXPERIMENT = "critique"
DEFAULT_STORE = "mlflow.db"
LOGS = ("calls.jsonl", "predictions.jsonl")


def add_option(parser) -> None:
    """The --mlflow option of a command."""
    parser.add_argument("--mlflow", nargs="?", const="", default=None, metavar="TRACKING_URI",
                        help=f"log each run directory as an MLflow run (needs `{install('mlflow')}`); "
                             "TRACKING_URI: where (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db, a SQLite "
                             "database in the working folder)")


def store_uri(tracking_uri: str | None = None) -> str:
    """Where runs are logged: `tracking_uri`, else $MLFLOW_TRACKING_URI, else the SQLite database mlflow.db in the
    working folder, named whole so that MLflow's own fallback (a ./mlruns file store wherever one exists, which
    MLflow 3 refuses) never applies."""
    given = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    return given or f"sqlite:///{Path(DEFAULT_STORE).resolve().as_posix()}"


def log_runs(paths: list, tracking_uri: str | None = None, extra: dict | None = None) \
        -> list[tuple[Path, str, bool]]:
    """Log every run directory among `paths` (folders of runs count as their runs): (run directory, MLflow run
    id, whether anything was logged) for each. `extra`: more metrics (name -> number) for each."""
    from critique.base.errors import UserError

    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UserError(f"--mlflow needs MLflow: {install('mlflow')}") from None
    from critique.analysis.reading.read import find_runs

    errors: list[str] = []
    found = find_runs([str(p) for p in paths], errors)
    where = store_uri(tracking_uri)
    try:
        if where.startswith("sqlite:"):
            _sqlite_ready(where)
        client = MlflowClient(where)
        experiment = _experiment_id(client, os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT)
        return [(path, *log_run(client, experiment, path, extra or {})) for path in found]
    except _store_errors() as exc:  # the store refused (a file store not allowed, a server down, a read-only disk)
        raise UserError(f"--mlflow {where}: {_problem(exc)}") from None


def _store_errors() -> tuple[type[BaseException], ...]:
    """What a tracking store raises when it refuses or cannot be written: MLflow's errors, the operating system's
    and, for a database store, SQLAlchemy's."""
    from mlflow.exceptions import MlflowException

    try:
        from sqlalchemy.exc import SQLAlchemyError
    except ImportError:
        return MlflowException, OSError
    return MlflowException, OSError, SQLAlchemyError


def _problem(exc: BaseException) -> str:
    """The first line of what a store's error says (an OSError: its reason and its file)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = (getattr(exc, "message", None) or str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _sqlite_ready(uri: str) -> None:
    """Refuse, in one line, a SQLite store that cannot work: without SQLAlchemy and Alembic (mlflow-skinny leaves
    them out), or a database or folder that cannot be written, where MLflow would retry for minutes and then
    raise."""
    from critique.base.errors import UserError

    try:
        import alembic  # noqa: F401
        from sqlalchemy.engine import make_url
    except ImportError:
        raise UserError(f"--mlflow {uri}: a SQLite store needs SQLAlchemy and Alembic, which mlflow-skinny leaves "
                        "out: pip install sqlalchemy alembic (or name a tracking server)") from None
    database = make_url(uri).database
    if not database or database == ":memory:":
        return
    path = Path(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab"):
            pass
        tempfile.TemporaryFile(dir=path.parent).close()  # SQLite writes its journal beside the database
    except OSError as exc:
        raise UserError(f"--mlflow {uri}: the store cannot be written ({_problem(exc)})") from None


def log_and_say(paths: list, tracking_uri: str) -> None:
    """`log_runs`, then one line on stderr saying what was logged where."""
    import sys

    logged = log_runs(paths, tracking_uri)
    changed = sum(1 for _, _, wrote in logged if wrote)
    where = store_uri(tracking_uri)
    print(f"critique: mlflow: {changed} run director{'y' if changed == 1 else 'ies'} logged, "
          f"{len(logged) - changed} unchanged since last logged, to {where} (experiment "
          f"{os.environ.get('MLFLOW_EXPERIMENT_NAME') or DEFAULT_EXPERIMENT})", file=sys.stderr)


def _experiment_id(client, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found is not None else client.create_experiment(name)


def log_run(client, experiment_id: str, run_dir: Path, extra: dict) -> tuple[str, bool]:
    """(the MLflow run id of `run_dir`, whether anything was logged). `extra`: more metrics."""
    from mlflow.entities import Metric, Param

    run_dir = Path(run_dir)
    manifest = logs.manifest(run_dir)
    state = _state(run_dir, manifest, extra)
    identity = str(manifest["run_id"]) if manifest.get("run_id") else None
    existing = _existing(client, experiment_id, run_dir, identity)
    if existing is not None and existing.data.tags.get(LOGGED_TAG) == state:
        return existing.info.run_id, False
    if existing is None:
        tags = {RUN_TAG: str(run_dir.resolve()), **({RUN_ID_TAG: identity} if identity else {})}
        existing = client.create_run(experiment_id, run_name=run_name(run_dir), tags=tags)
    run_id, known = existing.info.run_id, existing.data.params
    stamp = int(time.time() * 1000)
    analysis = _analysis(run_dir)
    params = [Param(k, v) for k, v in params_of(manifest).items() if k not in known]
    numbers = {**prediction_metrics(run_dir), **(metrics_of(analysis) if analysis is not None else {}), **extra}
    metrics = [Metric(metric_name(k), float(v), stamp, 0) for k, v in numbers.items()]
    for start in range(0, max(len(metrics), len(params), 1), 100):  # MLflow's batch limit is 100 params
        client.log_batch(run_id, metrics=metrics[start:start + 100], params=params[start:start + 100])
    _log_artifacts(client, run_id, run_dir, analysis)
    client.set_tag(run_id, LOGGED_TAG, state)
    client.set_terminated(run_id, "FINISHED" if manifest.get("status") == "complete" else "KILLED")
    return run_id, True


def _existing(client, experiment_id: str, run_dir: Path, identity: str | None):
    """The MLflow run of `run_dir`: the one tagged with its path and with its manifest's run id `identity` (none
    for a manifest without one), so that a folder reused for another run is never logged into the MLflow run of
    the run it held before."""
    query = f"tags.`{RUN_TAG}` = '{_quoted(str(run_dir.resolve()))}'"
    if identity:
        query += f" and tags.`{RUN_ID_TAG}` = '{_quoted(identity)}'"
    found = client.search_runs([experiment_id], filter_string=query)
    return next((run for run in found if run.data.tags.get(RUN_ID_TAG) == identity), None)


def _quoted(text: str) -> str:
    """`text` inside '...' of an MLflow search filter."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _state(run_dir: Path, manifest: dict, extra: dict) -> str:
    """What changes when a run directory is resumed: its manifest and the sizes of its logs (and the metrics
    given beside them)."""
    sizes = {name: (run_dir / name).stat().st_size if (run_dir / name).exists() else 0 for name in LOGS}
    text = json.dumps({"manifest": manifest, "sizes": sizes, "extra": extra}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_name(run_dir: Path) -> str:
    """The MLflow run's name: what sets the run directory apart first (``stream-self``, ``k-3``), then its dataset
    and model, so that a list cut after a few characters still tells runs apart."""
    parts = Path(run_dir).name.split("__")
    return " · ".join(parts[2:] + parts[:2]) if len(parts) > 2 else Path(run_dir).name


def params_of(manifest: dict) -> dict[str, str]:
    """The settings that make the run's identity (each, default values too: a manifest written before a setting
    existed has the value the run had, critique.base.config.manifest_value), its dataset and its strategies, and
    each field of its probe or ablation (``probe.feedback``: a stream's critic), as MLflow params."""
    config = manifest.get("config") or {}
    params = {name: manifest_value(config, name) for name in IDENTITY}
    params["dataset"] = (manifest.get("dataset") or {}).get("name") or config.get("dataset")
    params["strategies"] = ",".join(config.get("strategies") or [])
    for key in ("probe", "ablation"):
        value = manifest.get(key)
        if value:
            params[key] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        if isinstance(value, dict):
            params.update({f"{key}.{field}": v for field, v in value.items() if not isinstance(v, (dict, list))})
    return {k: "" if v is None else rundir.redact(str(v))[:6000] for k, v in params.items()}


def prediction_metrics(run_dir: Path) -> dict[str, float]:
    """For every run directory, whatever tables it fills (an ablation, a stream, a probe, a credit run):
    ``predictions/<stage>/<strategy>/accuracy`` (percent of its final predictions with a verdict) and ``/n``."""
    counts: dict[str, list[int]] = {}
    for record in logs.predictions(run_dir):
        if record.get("correct") is None:
            continue
        seen = counts.setdefault(f"predictions/{record.get('stage')}/{record.get('strategy') or 'none'}", [0, 0])
        seen[0] += bool(record["correct"])
        seen[1] += 1
    metrics = {}
    for name, (right, total) in counts.items():
        metrics[metric_name(f"{name}/accuracy")] = 100.0 * right / total
        metrics[metric_name(f"{name}/n")] = float(total)
    return metrics


def metrics_of(analysis) -> dict[str, float]:
    """Every number of the tables an analysis (of one run directory) fills, and the headline claims, by metric
    name."""
    from critique.analysis.study import render

    out = render.as_dict(analysis.result)
    metrics: dict[str, float] = {}
    for key, rows in out.items():
        if key.startswith("table") or key in ("methods", "mismatch"):
            metrics.update(_table_metrics(key, rows))
    for claim, numbers in (out.get("claims") or {}).items():
        for name, value in (numbers or {}).items():
            if _number(value):
                metrics[metric_name(f"claims/{claim}/{name}")] = float(value)
    return metrics


def _table_metrics(key: str, rows) -> dict[str, float]:
    """`<table>/<column>/<strategy>` for each number of a table with one row per strategy (or one row)."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return {}
    named = [r.get("strategy") for r in rows]
    if len(set(named)) != len(rows) or any(k in rows[0] for k in ("user", "value", "condition")):
        return {}  # several rows per strategy (per user, per value): not one metric each
    metrics = {}
    for row, strategy in zip(rows, named):
        for column, value in row.items():
            if _number(value) and column != "strategy":
                name = f"{key}/{column}" + (f"/{strategy}" if strategy is not None else "")
                metrics[metric_name(name)] = float(value)
    return metrics


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metric_name(text: str) -> str:
    """A name MLflow takes (letters, digits and _-. /:), with + spelled out (EP+SEM_CRIT: EP_plus_SEM_CRIT)."""
    return re.sub(r"[^A-Za-z0-9_\-. /:]", "_", text.replace("+", "_plus_"))


def _analysis(run_dir: Path):
    """The tables of one run directory, or None when it fills none (a Learner's folder: no study run)."""
    from critique.analysis import analyse
    from critique.analysis.stats import core as stats
    from critique.base.errors import UserError

    args = Namespace(runs=[str(run_dir)], results=None, suggestibility=None, costs=None, allow_mixed=False,
                     inference=False, workers=1)
    try:
        return analyse.analyse(args)
    except UserError:
        return None
    finally:
        stats.stop_helper()


def _log_artifacts(client, run_id: str, run_dir: Path, analysis) -> None:
    from critique.analysis.study import report

    client.log_artifact(run_id, str(run_dir / rundir.MANIFEST))
    if (run_dir / "memory").is_dir():
        client.log_artifacts(run_id, str(run_dir / "memory"), "memory")
    if analysis is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        rundir.write_text_atomic(page, report.html_report(analysis))
        client.log_artifact(run_id, str(page))
