"""--mlflow for every kind of run directory (critique.analysis.mlflow_log): each gets metrics from its final
predictions, its settings with their default values and its probe's fields as params, and a name that tells it
apart; the extra's `mlflow ui` serves the runs logged."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mlflow")
from mlflow.tracking import MlflowClient  # noqa: E402

from critique.analysis import mlflow_log  # noqa: E402
from critique.cli import main  # noqa: E402

import test_mlflow  # noqa: E402

store = test_mlflow.store  # the fixture: a SQLite store in a temporary working folder

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "logs"
KINDS = ["pref-gen__local_smollm2__stream-self",  # a stream
         "mcr-gen__local_smollm2__k-3",  # an ablation
         "mcr-gen__local_smollm2__suggestibility",  # a probe
         "mcr-gen__local_smollm2__credit-EP_CRIT-test-half"]  # a credit run
SERVER_WAIT_S = 300  # how long `mlflow ui` is given to answer before the test counts it as a hang


def final_accuracy(run: Path, stage: str, strategy: str) -> tuple[float, int]:
    final = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["stage"] == stage and record["strategy"] == strategy:
            final[(record.get("user"), record["item_id"])] = record
    judged = [r["correct"] for r in final.values() if r["correct"] is not None]
    return 100.0 * sum(judged) / len(judged), len(judged)


@pytest.mark.parametrize("name", KINDS)
def test_every_kind_of_run_directory_gets_the_accuracy_of_its_predictions(tmp_path, store, name):
    run = tmp_path / name
    shutil.copytree(LOGS / name, run)
    (logged,) = [mlflow_log.log_runs([run], store)[0]]
    metrics = MlflowClient(store).get_run(logged[1]).data.metrics
    stages = {json.loads(line)["stage"] for line in (run / "predictions.jsonl").read_text().splitlines()}
    for stage in stages - {"train_predict"}:
        strategies = {json.loads(line)["strategy"] for line in (run / "predictions.jsonl").read_text().splitlines()
                      if json.loads(line)["stage"] == stage}
        for strategy in strategies:
            accuracy, n = final_accuracy(run, stage, strategy)
            key = mlflow_log.metric_name(f"predictions/{stage}/{strategy or 'none'}")
            assert metrics[f"{key}/accuracy"] == pytest.approx(accuracy) and metrics[f"{key}/n"] == n


def test_params_hold_default_values_and_a_streams_feedback(tmp_path, store):
    run = tmp_path / KINDS[0]
    shutil.copytree(LOGS / KINDS[0], run)
    manifest = json.loads((run / "manifest.json").read_text())
    assert "answer_by" not in manifest["config"]  # written before --answer-by existed
    (logged,) = mlflow_log.log_runs([run], store)
    found = MlflowClient(store).get_run(logged[1])
    params = found.data.params
    assert params["answer_by"] == "generate" and params["example_order"] == "nearest-first"
    assert params["critic"] == "gold" and params["probe.feedback"] == "self" and params["probe.name"] == "stream"
    assert found.info.run_name == "stream-self · pref-gen · local_smollm2"


def test_run_names_lead_with_what_sets_them_apart():
    assert mlflow_log.run_name(Path("x/pref-gen__local_smollm2__stream-self")) == \
        "stream-self · pref-gen · local_smollm2"
    assert mlflow_log.run_name(Path("x/mcr-gen__local_smollm2__critic-self__deinflate-drop-reorder")) == \
        "critic-self · deinflate-drop-reorder · mcr-gen · local_smollm2"
    assert mlflow_log.run_name(Path("x/control-pos__local_smollm2")) == "control-pos__local_smollm2"


def test_what_mlflow_writes_into_the_working_folder_is_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "mlflow.db", "mlruns/0/meta.yaml"], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert ignored == ["mlflow.db", "mlruns/0/meta.yaml"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_served(url: str, server: subprocess.Popen) -> None:
    """Until the server answers (an event it reports), or it ended first."""
    deadline = time.monotonic() + SERVER_WAIT_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None:
            pytest.fail(f"mlflow ui ended: {server.stdout.read()}")
        if time.monotonic() > deadline:
            pytest.fail("mlflow ui did not answer")
        time.sleep(0.2)


def test_the_extra_serves_mlflow_ui_and_a_run_logged_to_it(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri",
                               f"sqlite:///{(tmp_path / 'ui.db').as_posix()}", "--host", "127.0.0.1", "--port",
                               str(port)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        uri = f"http://127.0.0.1:{port}"
        wait_until_served(uri, server)
        run = tmp_path / "control-pos__local_smollm2"
        shutil.copytree(LOGS / run.name, run)
        assert main(["tables", str(run), "--mlflow", uri, "-o", str(tmp_path / "t.md")]) == 0
        client = MlflowClient(uri)
        experiment = client.get_experiment_by_name(mlflow_log.DEFAULT_EXPERIMENT)
        (logged,) = client.search_runs([experiment.experiment_id])
        assert logged.data.params["dataset"] == "control-pos" and "table1/accuracy/zero_shot" in logged.data.metrics
    finally:
        server.terminate()
        server.wait(timeout=60)
