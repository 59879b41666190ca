"""Inputs the tables used to trust, checked against each other: a manifest that names another model than its
calls, a repeated call line, predictions for more test items than the dataset has, negative token counts, and a
results CSV with accuracies outside [0, 100]. Each is said, and nothing is counted that should not be."""

import json

from critique.analysis import synthetic
from critique.analysis.study import cells, tables
from critique.analysis.__main__ import main
from critique.analysis.reading.load import load


def answers(n, strategy="zero_shot", **extra):
    return [synthetic.prediction("test", strategy, f"t{i}", i % 2 == 0, **extra) for i in range(n)]


def manifest(model="m", n_test=4):
    head = synthetic.manifest(model, "d1")
    head["dataset"]["n_test"] = n_test
    return head


def test_a_manifest_that_names_another_model_than_its_calls_is_left_out(tmp_path):
    synthetic.write_run(tmp_path / "edited", manifest("gpt-5"), [synthetic.call("critique", None, "r0", model="m")],
                        answers(4))
    synthetic.write_run(tmp_path / "fine", manifest("m"), [synthetic.call("critique", None, "r0", model="m")],
                        answers(4))
    logs = load([str(tmp_path)])
    assert [e.meta["model"] for e in logs.experiments] == ["m"]
    assert any("names the model 'gpt-5' but its calls were made by m" in e for e in logs.errors), logs.errors


def test_a_repeated_call_line_is_counted_once(tmp_path):
    critique = synthetic.call("critique", None, "r0", completion_tokens=40)
    synthetic.write_run(tmp_path / "run", manifest(), [critique, critique, synthetic.call("summary", None, "s")],
                        answers(4) + [synthetic.prediction("train_predict", None, "r0", True, completion_tokens=5)])
    logs = load([str(tmp_path)])
    costs = tables.build(cells.from_logs(logs)).table("table5_costs").rows
    assert costs[0]["critique_tokens"] == 40  # not 80
    assert any("1 call records repeat an answered request" in p for p in logs.problems), logs.problems


def test_predictions_for_more_test_items_than_the_dataset_has_are_left_out(tmp_path):
    synthetic.write_run(tmp_path / "run", manifest(n_test=4), [], answers(5))
    logs = load([str(tmp_path)])
    assert not logs.experiments
    assert any("zero_shot answers 5 test items but its dataset has 4" in e for e in logs.errors), logs.errors


def test_a_negative_token_count_is_no_count(tmp_path):
    synthetic.write_run(tmp_path / "run", manifest(), [],
                        answers(2, completion_tokens=-100) + answers(4, "EP_LABEL", completion_tokens=10))
    rows = {r["strategy"]: r for r in cells.from_logs(load([str(tmp_path)])).tokens}
    assert rows.get("zero_shot", {}).get("tokens_per_question") is None  # no count, not -100
    assert rows["EP_LABEL"]["tokens_per_question"] == 10


def test_a_results_csv_with_accuracies_outside_0_to_100_says_so(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("model,dataset,strategy,accuracy\nm,d,zero_shot,150\nm,d,EP_LABEL,-5\n"
                                    "m,d,EP_CRIT,60\n")
    assert main(["tables", "--results", str(tmp_path / "r.csv"), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "column accuracy: not a percent in [0, 100] on line(s) 2, 3" in err
    rows = {r["strategy"]: r["accuracy"] for r in json.loads(out)["table1"]}
    assert rows == {"EP_CRIT": 60}
