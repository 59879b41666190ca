"""The one reader of run directories (analysis.reading.logs): what it reads is what the writer writes, the latest
record per item, only the fields asked for; the counts kept between runs (analysis.reading.count_cache) are used for
the same logs only; and `critique run`'s rows and the ablation summaries are Table 1's cells."""

import os
import time

import pytest

from critique.analysis import synthetic
from critique.analysis.memory import credit
from critique.analysis.reading import count_cache, frames, logs, read
from critique.analysis.study import run_table
from critique.base import records, rundir
from critique.engine import scores
from critique.experiments import overturn as _overturn, probes as _probes, verify as _verify  # noqa: F401 - they declare
from critique.experiments.credit import deletion as _credit, prune as _prune  # noqa: F401 - their fields


def written(kind: str) -> set[str]:
    """The fields the writer may write in a record of ``kind`` (a prediction's: with every experiment's)."""
    names = {f.name for f in records.fields(kind)}
    if kind == "prediction":
        names |= {f.name for own in records.EXPERIMENTS.values() for f in own}
    return names


@pytest.mark.parametrize("kind, fields", [
    ("prediction", read.PREDICTION_FIELDS), ("prediction", frames.OUTCOME_FIELDS), ("call", read.CALL_FIELDS),
    ("call", credit.CALL_FIELDS), ("memory_entry", read.MEMORY_FIELDS)])
def test_the_fields_the_analysis_reads_are_fields_the_writer_writes(kind, fields):
    assert set(fields) <= written(kind), f"not in critique.base.records ({kind}): {set(fields) - written(kind)}"


def test_a_field_the_writer_does_not_write_fails_the_check():
    assert not {"correct", "no_such_field"} <= written("prediction")


def a_run(path, predictions, calls=(), kind="single"):
    return synthetic.write_run(path, synthetic.manifest("m", "d", kind=kind), calls, predictions)


def test_predictions_are_the_latest_per_item_of_the_stages_asked_for(tmp_path):
    first = synthetic.prediction("test", "zero_shot", "t0", False, error="timed out")
    again = synthetic.prediction("test", "zero_shot", "t0", True)
    train = synthetic.prediction("train_predict", None, "t0", True)
    run = a_run(tmp_path / "r", [first, train, again])
    assert logs.predictions(run) == [again, train]
    assert logs.predictions(run, ("test",)) == [again]
    assert logs.predictions(tmp_path / "absent") == []


def test_rows_hold_only_the_fields_asked_for_and_a_cut_line_is_reported(tmp_path):
    calls = [synthetic.call("critique", item_id="i0", completion_tokens=7),
             synthetic.call("test", "zero_shot", item_id="i0", completion_tokens=9)]
    run = a_run(tmp_path / "r", [], calls)
    with (run / rundir.CALLS).open("a") as handle:
        handle.write('{"stage": "crit')
    problems = []
    assert logs.rows(run, logs.CALLS, ("stage", "completion_tokens"), problems, stages=("critique",)) == [
        ("critique", 7)]
    assert problems == [f"{run / rundir.CALLS}:3: unreadable line skipped (cut by a crash?)"]
    assert [r["stage"] for r in logs.records(run, logs.CALLS)] == ["critique", "test"]


def test_memory_is_none_without_one_and_its_documents_are_read(tmp_path):
    run = a_run(tmp_path / "r", [])
    assert logs.memory(run) is None and logs.memory_document(run, logs.SEMANTIC) is None
    (run / rundir.MEMORY).mkdir()
    (run / logs.EPISODIC).write_text('{"id": "e0"}\n\n[1]\n{"id": "e1"}\n')
    (run / rundir.MEMORY / logs.DEMOTED).write_text('{"ids": ["e1"]}')
    assert logs.memory(run) == [{"id": "e0"}, {"id": "e1"}]
    assert logs.memory_document(run, logs.DEMOTED) == {"ids": ["e1"]}


def settled(run, seconds: float = 60.0):
    """Date the run's logs ``seconds`` back (logs changed within count_cache.RACY_S are not kept)."""
    past = time.time() - seconds
    for log in (rundir.PREDICTIONS, rundir.CALLS):
        os.utime(run / log, (past, past))


def counted(run):
    return read.read_records(str(run), True, False, False, False, "m", None)


def test_counts_are_kept_for_the_same_logs_only(home, monkeypatch):
    run = a_run(home / "r", [synthetic.prediction("test", "zero_shot", f"t{i}", i % 2 == 0) for i in range(4)],
                [synthetic.call("critique", item_id="i0", completion_tokens=7)])
    settled(run)
    first = counted(run)
    monkeypatch.setattr(read, "count", lambda *args: pytest.fail("the logs were read again"))
    assert counted(run) == first  # the same logs: the counts kept
    monkeypatch.undo()
    with (run / rundir.PREDICTIONS).open("a") as handle:
        handle.write(rundir.dumps(synthetic.prediction("test", "EP_CRIT", "t0", True)) + "\n")
    settled(run)
    again = counted(run)
    assert again != first and ("test", "EP_CRIT", "") in again[0]  # a log that grew: read again


def test_logs_changed_just_now_are_not_kept(home):
    run = a_run(home / "r", [synthetic.prediction("test", "zero_shot", "t0", True)])
    counted(run)
    assert not (home / "cache" / count_cache.FOLDER).exists()
    settled(run)
    counted(run)
    assert len(list((home / "cache" / count_cache.FOLDER).glob("*.json"))) == 1


def test_the_run_table_and_the_ablation_summary_are_table_1s_cells(tmp_path):
    # preference data, users of unequal sizes: a per-user mean (Table 1) is not the pooled share
    predictions = [synthetic.prediction("test", "zero_shot", f"a{i}", True, user="u1") for i in range(3)]
    predictions += [synthetic.prediction("test", "zero_shot", "b0", False, user="u2", completion_tokens=10),
                    synthetic.prediction("test", "zero_shot", "b1", True, user="u2", completion_tokens=30)]
    run = a_run(tmp_path / "r", predictions, kind="preference")
    table = run_table.rows(run)
    summary = scores.strategy_rows(logs.predictions(run), ["EP_CRIT", "zero_shot"])
    assert [r["strategy"] for r in summary] == ["zero_shot"]
    assert summary[0]["accuracy"] == table[0]["accuracy"] == pytest.approx(75.0)  # (100 + 50) / 2, not 80
    assert summary[0]["tokens_per_question"] == table[0]["tokens_per_question"] == pytest.approx(8.0)
    assert summary[0]["n"] == 5 and summary[0]["timeouts"] == 0
