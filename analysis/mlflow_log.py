"""`--mlflow [TRACKING_URI]`: each run directory as one MLflow run (the `mlflow` extra).

The MLflow run of a run directory is found by its tag `critique.run_dir` (the folder's absolute path), so logging
a run directory again, after it was resumed or unchanged, adds to the same MLflow run and never makes a second
one; a run directory whose logs are unchanged since it was last logged (the tag `critique.logged`: its manifest
and the sizes of its logs) is left as it is. What is logged:

- params: the run's settings that make its identity (critique.base.config.IDENTITY), its dataset and strategies;
- metrics: every number of the study's tables that these logs fill, as `<table>/<column>/<strategy>` (Table 1's
  accuracy and interval per strategy, tokens and costs, the methods table), and the headline claims
  (`claims/C1/vs_zero_shot`, ...);
- artifacts: the manifest, the memory folder and the HTML report of the run directory.

The experiment is $MLFLOW_EXPERIMENT_NAME, else "critique". Nothing here calls a model.
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

from critique.analysis import logs
from critique.base import rundir
from critique.base.config import IDENTITY

RUN_TAG = "critique.run_dir"
LOGGED_TAG = "critique.logged"
DEFAULT_EXPERIMENT = "critique"
LOGS = ("calls.jsonl", "predictions.jsonl")


def add_option(parser) -> None:
    """The --mlflow option of a command."""
    parser.add_argument("--mlflow", nargs="?", const="", default=None, metavar="TRACKING_URI",
                        help="log each run directory as an MLflow run (needs `pip install critique[mlflow]`); "
                             "TRACKING_URI: where (default: $MLFLOW_TRACKING_URI, else MLflow's own default)")


def log_runs(paths: list, tracking_uri: str | None = None, extra: dict | None = None) \
        -> list[tuple[Path, str, bool]]:
    """Log every run directory among `paths` (folders of runs count as their runs): (run directory, MLflow run
    id, whether anything was logged) for each. `extra`: more metrics (name -> number) for each."""
    from critique.base.errors import UserError

    try:
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UserError("--mlflow needs MLflow: pip install critique[mlflow]") from None
    from critique.analysis.read import find_runs

    errors: list[str] = []
    found = find_runs([str(p) for p in paths], errors)
    try:
        client = MlflowClient(tracking_uri or None)
        experiment = _experiment_id(client, os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT)
        return [(path, *log_run(client, experiment, path, extra or {})) for path in found]
    except MlflowException as exc:  # the tracking store refused (a file store not allowed, a server down)
        raise UserError(f"--mlflow: {exc.message}") from None


def log_and_say(paths: list, tracking_uri: str) -> None:
    """`log_runs`, then one line on stderr saying what was logged where."""
    import sys

    logged = log_runs(paths, tracking_uri)
    changed = sum(1 for _, _, wrote in logged if wrote)
    where = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "MLflow's default tracking URI"
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
    existing = _existing(client, experiment_id, run_dir)
    if existing is not None and existing.data.tags.get(LOGGED_TAG) == state:
        return existing.info.run_id, False
    if existing is None:
        existing = client.create_run(experiment_id, run_name=run_dir.name,
                                     tags={RUN_TAG: str(run_dir.resolve())})
    run_id, known = existing.info.run_id, existing.data.params
    stamp = int(time.time() * 1000)
    analysis = _analysis(run_dir)
    params = [Param(k, v) for k, v in params_of(manifest).items() if k not in known]
    numbers = {**(metrics_of(analysis) if analysis is not None else {}), **extra}
    metrics = [Metric(metric_name(k), float(v), stamp, 0) for k, v in numbers.items()]
    for start in range(0, max(len(metrics), len(params), 1), 100):  # MLflow's batch limit is 100 params
        client.log_batch(run_id, metrics=metrics[start:start + 100], params=params[start:start + 100])
    _log_artifacts(client, run_id, run_dir, analysis)
    client.set_tag(run_id, LOGGED_TAG, state)
    client.set_terminated(run_id, "FINISHED" if manifest.get("status") == "complete" else "KILLED")
    return run_id, True


def _existing(client, experiment_id: str, run_dir: Path):
    path = str(run_dir.resolve()).replace("\\", "\\\\").replace("'", "\\'")
    found = client.search_runs([experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{path}'", max_results=1)
    return found[0] if found else None


def _state(run_dir: Path, manifest: dict, extra: dict) -> str:
    """What changes when a run directory is resumed: its manifest and the sizes of its logs (and the metrics
    given beside them)."""
    sizes = {name: (run_dir / name).stat().st_size if (run_dir / name).exists() else 0 for name in LOGS}
    text = json.dumps({"manifest": manifest, "sizes": sizes, "extra": extra}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def params_of(manifest: dict) -> dict[str, str]:
    """The settings that make the run's identity, its dataset and its strategies, as MLflow params."""
    config = manifest.get("config") or {}
    params = {name: config.get(name) for name in IDENTITY if name in config}
    params["dataset"] = (manifest.get("dataset") or {}).get("name") or config.get("dataset")
    params["strategies"] = ",".join(config.get("strategies") or [])
    for key in ("probe", "ablation"):
        if manifest.get(key):
            params[key] = manifest[key] if isinstance(manifest[key], str) else json.dumps(manifest[key])
    return {k: "" if v is None else rundir.redact(str(v))[:6000] for k, v in params.items()}


def metrics_of(analysis) -> dict[str, float]:
    """Every number of the tables an analysis (of one run directory) fills, and the headline claims, by metric
    name."""
    from critique.analysis import render

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
    from critique.analysis import analyse, stats
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
    from critique.analysis import report

    client.log_artifact(run_id, str(run_dir / rundir.MANIFEST))
    if (run_dir / "memory").is_dir():
        client.log_artifacts(run_id, str(run_dir / "memory"), "memory")
    if analysis is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        rundir.write_text_atomic(page, report.html_report(analysis))
        client.log_artifact(run_id, str(page))
