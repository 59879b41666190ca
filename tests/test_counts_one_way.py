"""Each count has one definition and one name: Table 1's tokens per question (completion tokens) and the methods
table's total tokens per question (prompt + completion) are told apart; a table that has nothing to show says
why truly; a method's normal stop at its budget is no error on the terminal."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from critique.analysis.study import run_table
from critique.cli import main
from critique.engine.field import dspy_program
from critique.engine.field.dspy_lm import STOPPED, StageStopped

ROOT = Path(__file__).resolve().parent.parent


def tables(tmp_path, folder) -> dict:
    out = tmp_path / "t.json"
    assert main(["tables", str(folder), "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_methods_table_counts_prompt_and_completion_under_its_own_name(tmp_path):
    run = ROOT / "logs-methods" / "control-pos__local_smollm2__train-budget-30000"
    found = tables(tmp_path, run)
    predictions = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["stage"] == "test":
            predictions[(record["strategy"], record.get("user"), record["item_id"])] = record
    for row in found["methods"]:
        assert "tokens_per_question" not in row  # Table 1's name, for completion tokens alone
        answered = [r for (s, _, _), r in predictions.items() if s == row["method"] and not r.get("error")]
        total = sum(r["prompt_tokens"] + r["completion_tokens"] for r in answered) / len(answered)
        assert row["total_tokens_per_question"] == total
    for row in run_table.rows(run):  # Table 1's cells, as `critique run` prints them: completion tokens
        answered = [r for (s, _, _), r in predictions.items() if s == row["strategy"] and not r.get("error")]
        assert row["tokens_per_question"] == sum(r["completion_tokens"] for r in answered) / len(answered)


def test_a_streams_logs_alone_do_not_claim_there_is_no_preference_dataset(tmp_path, capsys):
    main(["tables", str(ROOT / "logs" / "pref-gen__local_smollm2__stream-self"), "-o", str(tmp_path / "t.md")])
    text = (tmp_path / "t.md").read_text() + capsys.readouterr().err
    assert "no preference dataset among the run directories" not in text


def test_a_methods_own_stop_is_no_error_on_the_terminal():
    seen = io.StringIO()
    handler = logging.StreamHandler(seen)
    logging.getLogger("dspy").addHandler(handler)
    try:
        dspy_program.quiet_optimizers()
        logger = logging.getLogger("dspy.utils.parallelizer")
        logger.error("Error for Example(question='q'): %s", StageStopped(f"{STOPPED}: budget"))
        try:
            raise StageStopped(f"{STOPPED}: budget")
        except StageStopped:
            logger.exception("the optimizer failed")
        logger.error("a real failure of DSPy's own")
    finally:
        logging.getLogger("dspy").removeHandler(handler)
    assert seen.getvalue().strip().splitlines() == ["a real failure of DSPy's own"]
