"""Run directories as DataFrames (analysis.reading.frames) and `critique export`: one row per logged record,
the experiment of each record, the question joined in, secrets never written."""

import json

import pandas as pd
import pytest

from critique.analysis import synthetic
from critique.analysis.reading import frames
from critique.analysis.__main__ import main
from critique.base import rundir
from critique.experiments import probes  # noqa: F401  (declares the consistency probe's fields)


def study(tmp_path, dataset_path=None):
    """Two runs of one experiment (the later one reanswers t1) and one with another k."""
    head = synthetic.manifest("m", "d", run_id="a", started="2025-01-01T00:00:00Z")
    if dataset_path is not None:
        head["dataset"]["path"] = str(dataset_path)
    first = [synthetic.prediction("test", "zero_shot", "t0", True, retrieved=["e0"]),
             synthetic.prediction("test", "zero_shot", "t1", False, retrieved=["e0", "e1"]),
             synthetic.prediction("test", "zero_shot", "t1", True, retrieved=["e1"])]  # a rerun within the run
    calls = [synthetic.call("test", "zero_shot", "t0"), synthetic.call("critique", None, "e0")]
    a = synthetic.write_run(tmp_path / "a", head, calls, first)
    (a / rundir.MEMORY).mkdir()
    entries = [{"id": "e0", "item_id": "e0", "user": None, "question": "q e0", "initial_answer": "A", "gold": "B",
                "critique": {"correct_answer": "B", "local_reason": "r", "global_reason": "g"}},
               {"id": "e1", "item_id": "e1", "user": None, "question": "q e1", "initial_answer": "A", "gold": "A",
                "critique": {"correct_answer": "A", "local_reason": "r", "global_reason": "g"}}]
    synthetic.write_jsonl(a / rundir.MEMORY / "episodic.jsonl", entries)
    later = dict(head, run_id="b", started="2025-01-02T00:00:00Z")
    synthetic.write_run(tmp_path / "b", later, [], [synthetic.prediction("test", "zero_shot", "t1", False)])
    other = synthetic.manifest("m", "d", run_id="c")
    other["config"]["k"] = 1
    synthetic.write_run(tmp_path / "c", other, [], [synthetic.prediction("test", "zero_shot", "t0", False)])
    return tmp_path


def test_one_row_per_logged_record_and_the_counted_ones(tmp_path):
    logs = frames.load([str(study(tmp_path))])
    p = logs.predictions()
    assert len(p) == 5 and list(p.columns[:9]) == frames.EXPERIMENT_COLUMNS
    counted = p[p["counted"]]
    # per experiment and item the latest record: t0 and t1 (of run b) for k=5, t0 for k=1
    assert sorted(zip(counted["variant"], counted["item_id"], counted["run"].str[-1])) == [
        ("k=1", "t0", "c"), ("k=5", "t0", "a"), ("k=5", "t1", "b")]
    assert set(p["variant"]) == {"k=1", "k=5"} and set(p["user"]) == {""}
    assert len(logs.calls()) == 2 and "prompt" in logs.calls()
    memory = logs.memory()
    assert list(memory["id"]) == ["e0", "e1"] and memory["critique_correct_answer"].tolist() == ["B", "A"]
    # counted test predictions of run a: t0 (e0); t1's counted record is run b's (no retrieval)
    assert memory["retrieved_by"].tolist() == [1, 0]


def test_questions_are_joined_from_the_dataset_folder(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    synthetic.write_jsonl(data / "test.jsonl", [{"id": "t0", "question": "Is it?", "answer": "A"},
                                                {"id": "t1", "question": "Or not?", "answer": "B"}])
    logs = frames.load([str(study(tmp_path / "runs", dataset_path=data))])
    p = logs.predictions()
    mine = p[p["run"].str.endswith("a")]
    assert dict(zip(mine["item_id"], mine["question"])) == {"t0": "Is it?", "t1": "Or not?"}
    assert p[p["run"].str.endswith("c")]["question"].isna().all()  # its dataset folder is not there


def test_export_csv_and_parquet_redact_secrets(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-verysecretvalue")
    runs = study(tmp_path / "runs")
    rows = [json.loads(line) for line in (runs / "a" / rundir.CALLS).read_text().splitlines()]
    rows[0]["response"] = "leaked sk-verysecretvalue here"
    synthetic.write_jsonl(runs / "a" / rundir.CALLS, rows)
    assert main(["export", str(runs), "--to", str(tmp_path / "csv")]) == 0
    assert "wrote" in capsys.readouterr().err
    predictions = pd.read_csv(tmp_path / "csv" / "predictions.csv")
    assert len(predictions) == 5 and json.loads(predictions["retrieved"][1]) == ["e0", "e1"]
    text = (tmp_path / "csv" / "calls.csv").read_text()
    assert "sk-verysecretvalue" not in text and "[REDACTED]" in text
    pytest.importorskip("pyarrow")
    assert main(["export", str(runs), "--to", str(tmp_path / "pq"), "--format", "parquet",
                 "--tables", "calls,memory"]) == 0
    calls = pd.read_parquet(tmp_path / "pq" / "calls.parquet")
    assert len(calls) == 2 and "sk-verysecretvalue" not in calls.to_csv()
    assert not (tmp_path / "pq" / "predictions.parquet").exists()
    assert b"sk-verysecretvalue" not in (tmp_path / "pq" / "calls.parquet").read_bytes()


def test_export_without_pyarrow_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(["export", str(study(tmp_path / "runs")), "--to", str(tmp_path / "out"), "--format", "parquet"]) == 2
    assert "needs pyarrow" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_inference_in_the_helper_equals_inference_here(tmp_path, capsys):
    """`critique tables --inference` computes in the scipy helper; library use computes here: same numbers."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_analysis_helpers import build_study

    from critique.analysis.reading import read
    from critique.analysis.study import cells, items, tables
    from critique.analysis.reading.load import load

    build_study(tmp_path / "runs")
    assert main(["tables", str(tmp_path / "runs"), "--inference", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    logs = load([str(tmp_path / "runs")])
    found = cells.from_logs(logs)
    here = items.build(read.found([str(tmp_path / "runs")])[0], tables.build(found), found)
    assert data["inference"]["paired"] == here.data["paired"] and data["inference"]["pooled"] == here.data["pooled"]
    assert data["inference"]["table2_holm"] == here.data["table2_holm"]
    assert data["claims"]["C4"]["within_dataset"] == here.c4_within
    assert len(data["inference"]["paired"]) == 4 * 6  # 2 models x 2 datasets, 3 critique strategies x 2 baselines


def test_repeat_spread_over_seeds_and_consistency_repeats(tmp_path):
    from critique.analysis.study import cells, items, tables
    from critique.analysis.reading.load import load

    for seed, right in ((0, 3), (1, 1)):  # 75% and 25% on four items
        head = synthetic.manifest("m", "d", run_id=f"s{seed}")
        head["config"]["seed"] = seed
        synthetic.write_run(tmp_path / f"seed{seed}", head, [],
                            [synthetic.prediction("test", "zero_shot", f"t{i}", i < right) for i in range(4)])
    probe = synthetic.manifest("m", "d", probe={"name": "consistency", "repeats": 2, "split": "test"}, run_id="p")
    synthetic.write_run(tmp_path / "probe", probe, [], [
        synthetic.prediction("probe", f"repeat-{r}", f"t{i}", i < r, experiment="consistency", repeat=r)
        for r in (1, 2) for i in range(4)])
    found = cells.from_logs(load([str(tmp_path)]))
    metas = frames.load([str(tmp_path)]).metas
    spread = {(r["model"], r["strategy"]): r
              for r in items.build(metas, tables.build(found), found).data["repeat_spread"]}
    seeds = spread[("m (seeds)", "zero_shot")]
    assert (seeds["repeats"], seeds["mean"], seeds["min"], seeds["max"]) == (2, 50.0, 25.0, 75.0)
    assert seeds["sd"] == pytest.approx(35.355, abs=1e-3)
    probe_row = spread[("m [seed=0]", "zero_shot (consistency probe)")]  # named like the plain run it goes with
    assert (probe_row["repeats"], probe_row["mean"]) == (2, 37.5)


def test_the_calls_table_is_written_a_part_at_a_time_and_equals_the_whole_frame(tmp_path, monkeypatch):
    runs = study(tmp_path / "runs")
    more = [synthetic.call("test", "zero_shot", f"t{n}") for n in range(7)]
    synthetic.write_run(tmp_path / "runs" / "d", synthetic.manifest("m", "d", run_id="d"), more, [])
    monkeypatch.setattr(frames, "CHUNK_ROWS", 3)  # parts of three records: several per run
    logs = frames.load([str(runs)])
    parts = list(logs.call_chunks())
    assert max(len(p) for p in parts) == 3 and sum(len(p) for p in parts) == 9
    assert main(["export", str(runs), "--to", str(tmp_path / "csv"), "--tables", "calls"]) == 0
    streamed = pd.read_csv(tmp_path / "csv" / "calls.csv")
    whole = frames.load([str(runs)]).calls()
    assert list(streamed.columns) == list(whole.columns) == logs.call_columns()
    assert streamed["request_hash"].tolist() == whole["request_hash"].tolist()
    assert streamed["prompt"].tolist() == whole["prompt"].tolist()


def test_export_keeps_lists_as_lists_in_parquet_and_no_grouping_cell_reads_back_as_nan(tmp_path, capsys):
    runs = study(tmp_path / "runs")
    assert main(["export", str(runs), "--to", str(tmp_path / "csv")]) == 0
    predictions = pd.read_csv(tmp_path / "csv" / "predictions.csv")
    for column in ("variant", "probe", "ablation", "user", "stage", "strategy"):
        assert predictions[column].notna().all(), column  # "" or null is written "-"
    assert set(predictions["user"]) == {"-"}
    assert predictions.groupby(["variant", "user", "probe"]).size().sum() == len(predictions) == 5
    pytest.importorskip("pyarrow")
    assert main(["export", str(runs), "--to", str(tmp_path / "pq"), "--format", "parquet"]) == 0
    frame = pd.read_parquet(tmp_path / "pq" / "predictions.parquet")
    assert [list(v) for v in frame["retrieved"]][:2] == [["e0"], ["e0", "e1"]]
    assert frame.groupby(["variant", "user", "probe"]).size().sum() == 5
    memory = pd.read_parquet(tmp_path / "pq" / "memory.parquet")
    assert len(memory) == 2 and set(memory["user"]) == {"-"}
