"""A model that gives one answer to everything is said so (issue 42): `critique run`'s table, `critique tables`
and the report show each strategy's answers, macro-F1 and per-class accuracy beside its accuracy, and warn
when one label takes nearly all of a strategy's answers. The numbers are checked against the shipped
controls' prediction records, read here with json and counted by hand (and by sklearn where installed)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from critique.analysis import synthetic
from critique.analysis.reading import count_cache, read, tally
from critique.analysis.study import answers
from critique.analysis.study.run_table import print_table
from critique.cli import main

LOGS = Path(__file__).resolve().parent.parent / "logs"
SMOLLM2 = LOGS / "control-pos__local_smollm2"  # answered "1" to every question
QWEN = LOGS / "control-pos__local_qwen2.5-coder-0.5b"
SPACE = ["1", "2", "3", "4"]


def answers_of(run: Path) -> dict[str, list[tuple]]:
    """strategy -> (gold, answer given) of the run's test records, the latest per item; no answer (None) where
    the record counts wrong whatever it says (timeout, parse failure, error, prompt not sent)."""
    latest = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["stage"] == "test":
            latest[(record["strategy"], record["user"], record["item_id"])] = record
    found: dict[str, list[tuple]] = {}
    for (strategy, _, _), r in latest.items():
        missing = r["timeout"] or r["parse_failed"] or r["error"] or r.get("context_overflow")
        found.setdefault(strategy, []).append((r["gold"], None if missing else r["answer"]))
    return found


def by_hand(pairs: list[tuple]) -> tuple[float, dict]:
    """Macro-F1 (%) over SPACE and per-class accuracy (%) per gold label, counted from (gold, answer) pairs."""
    scores, recall = [], {}
    for label in SPACE:
        tp = sum(g == a == label for g, a in pairs)
        fp = sum(a == label != g for g, a in pairs)
        fn = sum(g == label != a for g, a in pairs)
        scores.append(200 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
        if any(g == label for g, _ in pairs):
            recall[label] = 100 * tp / sum(g == label for g, _ in pairs)
    return sum(scores) / len(scores), recall


def table_rows(out: str) -> dict[str, list[str]]:
    return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in out.splitlines() if line.startswith("| "))}


def test_the_run_table_warns_of_one_answer_to_everything_and_shows_macro_f1(capsys):
    print_table(SMOLLM2)
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert rows["strategy"][3] == "macro-F1 %"
    for strategy, pairs in answers_of(SMOLLM2).items():
        assert {a for _, a in pairs} == {"1"}
        ones = sum(g == "1" for g, _ in pairs)
        assert f'critique: warning: {strategy} answered "1" to {len(pairs)} of {len(pairs)} test questions (100%): ' \
               "its accuracy is that label's share of the test set" in out
        assert rows[strategy][2] == f"{100 * ones / len(pairs):.1f}"  # accuracy: the share of "1" among the gold
        f1_of_one = 200 * ones / (2 * ones + len(pairs) - ones)  # every "1" right, every other gold wrong
        assert rows[strategy][3] == f"{f1_of_one / 4:.1f}" == f"{by_hand(pairs)[0]:.1f}" == "10.1"


def test_a_model_that_learned_gets_no_warning_for_ep_label(capsys):
    print_table(QWEN)
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert "EP_LABEL answered" not in out and "critique: warning" not in out
    for strategy, pairs in answers_of(QWEN).items():
        assert rows[strategy][3] == f"{by_hand(pairs)[0]:.1f}"


def test_macro_f1_and_per_class_accuracy_are_sklearns():
    metrics = pytest.importorskip("sklearn.metrics")
    from critique.analysis.study import cells
    from critique.analysis.reading.load import load

    found = {r["strategy"]: r for r in answers.rows(cells.from_logs(load([str(QWEN)], workers=1)))}
    for strategy, pairs in answers_of(QWEN).items():
        gold, given = [g for g, _ in pairs], [a or "none" for _, a in pairs]
        occurring = [label for label in SPACE if label in gold or label in given]
        macro = metrics.f1_score(gold, given, labels=occurring, average="macro", zero_division=0)
        recall = metrics.recall_score(gold, given, labels=SPACE, average=None, zero_division=0)
        assert found[strategy]["macro_f1"] == pytest.approx(100 * macro)
        assert found[strategy]["per_class"] == pytest.approx(dict(zip(SPACE, 100 * recall)))


def test_the_tables_show_the_answers_and_warn(home, capsys):
    assert main(["tables", str(SMOLLM2), str(QWEN), "--format", "json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    rows = {(r["model"], r["strategy"]): r for r in data["answers"]}
    for run, model in ((SMOLLM2, "local/smollm2"), (QWEN, "local/qwen2.5-coder-0.5b")):
        for strategy, pairs in answers_of(run).items():
            row, (macro, recall) = rows[(model, strategy)], by_hand(pairs)
            top = max(sorted({a for _, a in pairs}), key=[a for _, a in pairs].count)
            assert row["macro_f1"] == pytest.approx(macro) and row["per_class"] == pytest.approx(recall)
            assert (row["top_answer"], row["n"]) == (top, len(pairs))
            assert row["top_share"] == pytest.approx(100 * [a for _, a in pairs].count(top) / len(pairs))
            assert row["accuracy"] == pytest.approx(100 * sum(g == a for g, a in pairs) / len(pairs))
    line = ('local/smollm2 x control-pos: EP_CRIT answered "1" to 250 of 250 test questions (100%): its accuracy '
            "is that label's share of the test set")
    assert line in data["problems"] and f"critique: warning: {line}" in captured.err
    assert rows[("local/smollm2", "EP_CRIT")]["one_answer"] and not rows[("local/qwen2.5-coder-0.5b", "EP_LABEL")][
        "one_answer"]
    assert not any("qwen" in p and "EP_LABEL answered" in p for p in data["problems"])
    assert main(["tables", str(SMOLLM2)]) == 0  # markdown: the table, its top answers marked
    assert "| local/smollm2 | control-pos | EP_CRIT | 250 | 25.2 | 10.1 | 1 (100%!) |" in capsys.readouterr().out


def test_the_report_shows_the_answers_table_and_the_warning(home, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(SMOLLM2), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<h2>Answers per model x dataset x strategy" in page
    assert html.escape('EP_CRIT answered "1" to 250 of 250 test questions (100%)') in page


def test_the_warning_starts_at_the_named_share():
    row = {"model": "m", "dataset": "d", "strategy": "EP_CRIT", "top_answer": "A", "n": 100, "answered": 100}
    assert answers.warnings([{**row, "top_count": 89, "top_share": 89.0}]) == []
    assert answers.ONE_ANSWER_SHARE == 90.0
    assert answers.warnings([{**row, "top_count": 90, "top_share": 90.0}], where=False) == [
        'EP_CRIT answered "A" to 90 of 100 test questions (90%): its accuracy says little beyond that label\'s '
        "share of the test set"]


def test_a_missing_answer_is_no_answer_and_the_counts_survive_the_cache(home, tmp_path):
    records = [synthetic.prediction("test", "zero_shot", "t0", True),  # gold A, answered A
               synthetic.prediction("test", "zero_shot", "t1", False),  # gold B, answered A
               synthetic.prediction("test", "zero_shot", "t2", False, parse_failed=True, gold="A"),  # a seeded "A"
               synthetic.prediction("test", "zero_shot", "t3", False, timeout=True, answer="B")]  # gold B, cut
    counted = tally.predictions(tally.latest_per_item([tuple(r.get(f) for f in read.PREDICTION_FIELDS)
                                                       for r in records]))
    confusion = counted[("test", "zero_shot", "")][tally.ANSWERS]
    assert confusion == {("A", "A"): 1, ("B", "A"): 1, ("A", None): 1, ("B", None): 1}
    assert answers.per_class(confusion) == {"A": 50.0, "B": 0.0}
    assert answers.macro_f1(confusion, ["A", "B"]) == pytest.approx((200 * 1 / (2 + 1 + 1) + 0.0) / 2)
    # a label of the space that is neither gold nor answer (C: a limited split never asks it) is left out, not 0
    assert answers.macro_f1({("A", "A"): 3, ("B", "A"): 2}, ["A", "B", "C"]) == pytest.approx((200 * 3 / 8 + 0) / 2)
    assert answers.distribution(confusion) == {"A": 100.0}
    assert answers.commonest_error(confusion) == ["B", "A", 1]
    run = str(tmp_path / "r")
    count_cache.store(run, ["how"], [None, None], (counted, {}, [], []))
    assert count_cache.load(run, ["how"], [None, None]) == (counted, {}, [], [])
