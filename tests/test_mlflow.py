"""--mlflow: each run directory as one MLflow run, in a real MLflow file store (critique.analysis.mlflow_log)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from mlflow.tracking import MlflowClient  # noqa: E402

from critique.analysis import mlflow_log  # noqa: E402
from critique.cli import main  # noqa: E402

SHIPPED = Path(__file__).resolve().parent.parent / "logs" / "control-pos__local_smollm2"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A file store in a temporary folder (MLflow refuses one unless told that it is wanted)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    return (tmp_path / "mlruns").as_uri()


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
    code = main(["tables", str(run), "--mlflow", (tmp_path / "m").as_uri(), "-o", str(tmp_path / "t.md")])
    assert code == 2 and "critique: error: --mlflow: " in capsys.readouterr().err


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
