"""--mlflow: each run directory as one MLflow run, in a real local SQLite store (critique.analysis.mlflow_log)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from mlflow.tracking import MlflowClient  # noqa: E402

from critique.analysis import mlflow_log  # noqa: E402
from critique.cli import main  # noqa: E402

SHIPPED = Path(__file__).resolve().parent.parent / "logs" / "control-pos__local_smollm2"
OTHER = SHIPPED.parent / "control-neg__local_qwen2.5-coder-0.5b"  # another dataset, another model, another run id


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A SQLite store in a temporary folder, the working folder too (MLflow puts its artifacts in ./mlruns)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"


def runs_in(uri: str) -> list:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(mlflow_log.DEFAULT_EXPERIMENT)
    return client.search_runs([experiment.experiment_id]) if experiment else []


def test_tables_logs_a_run_directory_once_with_its_settings_numbers_and_artifacts(tmp_path, store, capsys):
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    assert main(["tables", str(run), "--mlflow", store, "--format", "json", "-o", str(tmp_path / "t.json")]) == 0
    table1 = json.loads((tmp_path / "t.json").read_text())["table1"]
    (logged,) = runs_in(store)
    assert logged.info.run_name == run.name and logged.data.tags[mlflow_log.RUN_TAG] == str(run.resolve())
    manifest = json.loads((run / "manifest.json").read_text())
    assert logged.data.params["k"] == str(manifest["config"]["k"]) and logged.data.params["dataset"] == "control-pos"
    for row in table1:
        name = mlflow_log.metric_name(f"table1/accuracy/{row['strategy']}")
        assert logged.data.metrics[name] == pytest.approx(row["accuracy"])
    assert "table1/accuracy/EP_plus_SEM_CRIT" in logged.data.metrics
    assert any(name.startswith("claims/C1/") for name in logged.data.metrics)
    client = MlflowClient(store)
    artifacts = {a.path for a in client.list_artifacts(logged.info.run_id)}
    assert {"manifest.json", "memory", "report.html"} <= artifacts
    assert {"memory/episodic.jsonl", "memory/semantic.json"} <= {
        a.path for a in client.list_artifacts(logged.info.run_id, "memory")}
    page = Path(client.download_artifacts(logged.info.run_id, "report.html", str(tmp_path)))
    assert "<html" in page.read_text()[:200].lower()
    assert "1 run directory logged, 0 unchanged" in capsys.readouterr().err


def test_logging_again_is_idempotent_and_a_resumed_run_updates_the_same_mlflow_run(tmp_path, store):
    run = tmp_path / "runs" / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    (first,) = mlflow_log.log_runs([run], store)
    assert first[2] is True
    (again,) = mlflow_log.log_runs([tmp_path / "runs"], store)  # a folder of runs counts as its runs
    assert again[1:] == (first[1], False)
    with (run / "predictions.jsonl").open("a") as log:  # a resumed run: its logs grew
        log.write((run / "predictions.jsonl").read_text().splitlines()[-1] + "\n")
    (resumed,) = mlflow_log.log_runs([run], store)
    assert resumed[1:] == (first[1], True)
    assert len(runs_in(store)) == 1


def test_run_logs_its_run_directory(home, fake_llm, store):
    out = home / "runs" / "r"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--strategies",
                 "zero_shot,EP_LABEL", "--out", str(out), "--quiet", "--no-cache", "--mlflow", store]) == 0
    (logged,) = runs_in(store)
    assert logged.data.tags[mlflow_log.RUN_TAG] == str(out.resolve())
    assert {"table1/accuracy/zero_shot", "table1/accuracy/EP_LABEL"} <= set(logged.data.metrics)
    assert logged.info.status == "FINISHED"


def test_a_store_that_refuses_is_a_plain_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    uri = (tmp_path / "m").as_uri()
    code = main(["tables", str(run), "--mlflow", uri, "-o", str(tmp_path / "t.md")])
    assert code == 2 and f"critique: error: --mlflow {uri}: " in capsys.readouterr().err


def test_a_folder_reused_for_another_run_gets_an_mlflow_run_of_its_own(tmp_path, store):
    run = tmp_path / "runs" / "r"
    shutil.copytree(SHIPPED, run)
    (first,) = mlflow_log.log_runs([run], store)
    before = MlflowClient(store).get_run(first[1]).data
    shutil.rmtree(run)
    shutil.copytree(OTHER, run)  # the same folder, now holding another model's run on another dataset
    (second,) = mlflow_log.log_runs([run], store)
    assert second[2] is True and second[1] != first[1]
    old, new = (MlflowClient(store).get_run(r[1]).data for r in (first, second))
    assert (old.params, old.metrics) == (before.params, before.metrics)
    assert new.params["dataset"] == "control-neg" and new.params["model"] == "local/qwen2.5-coder-0.5b"
    assert new.tags[mlflow_log.RUN_ID_TAG] == json.loads((run / "manifest.json").read_text())["run_id"]
    assert mlflow_log.log_runs([run], store)[0][1:] == (second[1], False)
    assert len(runs_in(store)) == 2


def test_a_store_that_cannot_be_written_is_one_line(tmp_path, store, capfd):
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    (tmp_path / "taken").write_text("a file where the store's folder would be\n")
    uri = f"sqlite:///{(tmp_path / 'taken' / 'mlflow.db').as_posix()}"
    assert main(["tables", str(run), "--mlflow", uri, "-o", str(tmp_path / "t.md")]) == 2
    (line,) = capfd.readouterr().err.strip().splitlines()
    assert line.startswith(f"critique: error: --mlflow {uri}: the store cannot be written (")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes a read-only folder")
def test_a_read_only_store_is_one_line(tmp_path, store, capfd):
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    uri = f"sqlite:///{(folder / 'mlflow.db').as_posix()}"
    try:
        assert main(["tables", str(run), "--mlflow", uri, "-o", str(tmp_path / "t.md")]) == 2
    finally:
        folder.chmod(0o755)
    (line,) = capfd.readouterr().err.strip().splitlines()
    assert line == (f"critique: error: --mlflow {uri}: the store cannot be written "
                    f"(Permission denied: {folder / 'mlflow.db'})")


def test_the_default_store_is_sqlite_in_the_working_folder(tmp_path, store, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    (tmp_path / "mlruns" / "0").mkdir(parents=True)  # an old file store, which MLflow itself would pick, then refuse
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text("name: Default\n")
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    assert main(["tables", str(run), "--mlflow", "-o", str(tmp_path / "t.md")]) == 0
    default = f"sqlite:///{(tmp_path / 'mlflow.db').resolve().as_posix()}"
    assert [r.info.run_name for r in runs_in(default)] == [run.name]
    assert f"logged, 0 unchanged since last logged, to {default} (experiment" in capsys.readouterr().err


def test_the_store_is_the_option_else_the_environment_else_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    default = f"sqlite:///{(tmp_path / 'mlflow.db').resolve().as_posix()}"
    assert mlflow_log.store_uri(None) == mlflow_log.store_uri("") == default
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://localhost:5000")
    assert mlflow_log.store_uri("") == "http://localhost:5000"
    assert mlflow_log.store_uri("sqlite:///elsewhere.db") == "sqlite:///elsewhere.db"


def test_a_sqlite_store_without_sqlalchemy_and_alembic_is_one_line(tmp_path, store, monkeypatch, capfd):
    monkeypatch.setitem(sys.modules, "alembic", None)  # mlflow-skinny alone: no Alembic to make the tables
    run = tmp_path / "control-pos__local_smollm2"
    shutil.copytree(SHIPPED, run)
    assert main(["tables", str(run), "--mlflow", store, "-o", str(tmp_path / "t.md")]) == 2
    (line,) = capfd.readouterr().err.strip().splitlines()
    assert line.startswith(f"critique: error: --mlflow {store}: a SQLite store needs SQLAlchemy and Alembic")


def test_study_logs_each_of_its_run_directories(home, fake_llm, store):
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen"]\nlimit = 3\nk = 2\nstrategies = ["zero_shot"]\nout = "out"\n\n'
                     '[[models]]\nname = "fake/model"\n\n[[models]]\nname = "fake/other"\n')
    assert main(["study", str(study), "--mlflow", store]) == 0
    logged = runs_in(store)
    assert sorted(r.info.run_name for r in logged) == ["mcr-gen__fake_model", "mcr-gen__fake_other"]
    assert main(["study", str(study), "--mlflow", store]) == 0  # complete cells skipped, nothing logged twice
    assert len(runs_in(store)) == 2


def test_a_learner_logs_its_folder_and_its_scores(home, fake_llm, store):
    from critique import Learner

    learner = Learner(model="fake/model", task="Is the statement true?", answer_space=["yes", "no"],
                      out=home / "learner", progress=False, k=2)
    learner.fit([("Water boils at 100 C at sea level.", "yes"), ("The sun is cold.", "no"),
                 ("Ice is frozen water.", "yes")])
    scores = learner.evaluate([("Fire is cold.", "no"), ("Snow is white.", "yes")], strategies=["zero_shot"])
    run_id = learner.log_mlflow(store, scores)
    (logged,) = runs_in(store)
    assert logged.info.run_id == run_id and logged.data.params["k"] == "2"
    assert logged.data.metrics["evaluate/accuracy/zero_shot"] == scores["zero_shot"].accuracy
    assert logged.data.metrics["evaluate/n/zero_shot"] == 2
    assert "memory" in {a.path for a in MlflowClient(store).list_artifacts(run_id)}
    assert learner.log_mlflow(store, scores) == run_id and len(runs_in(store)) == 1
