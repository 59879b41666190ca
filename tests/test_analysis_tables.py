"""Every table and claim of the small study (tests/test_analysis_helpers.py) against hand-computed values."""

import math

import pytest

from critique.analysis import synthetic
from critique.analysis.study import cells, intervals, tables
from critique.analysis.reading.load import load
from test_analysis_helpers import ACCURACY, build_study

T_975_DF3 = 3.182446305284263  # Student's t, 97.5% quantile, 3 degrees of freedom


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    build_study(root)
    logs = load([str(root)])
    return logs, tables.build(cells.from_logs(logs))


def by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_table1_accuracy_counts_wrong_answers_and_averages_users(study):
    _, result = study
    rows = by(result.table("table1").rows, "model", "dataset", "strategy")
    for (model, dataset), accuracy in ACCURACY.items():
        for strategy, expected in accuracy.items():
            assert rows[(model, dataset, strategy)]["accuracy"] == pytest.approx(expected), (model, dataset, strategy)
    # 10 test items per strategy on d1: the failed first attempt was replaced by its rerun
    assert rows[("mA", "d1", "zero_shot")]["n"] == 10
    # pref: users of 2 and 10 items at 50% and 30%: mean over users 40, not the pooled 4/12
    assert rows[("mA", "pref", "zero_shot")]["n"] == 12


def test_table2_pooled_gains(study):
    _, result = study
    rows = by(result.table("table2").rows, "critique", "baseline")
    best = rows[("EP+SEM_CRIT", "zero_shot")]  # differences 30, 10, 0, 30
    assert best["n"] == 4 and best["mean"] == pytest.approx(17.5) and best["sd"] == pytest.approx(15.0)
    assert best["ci_low"] == pytest.approx(17.5 - T_975_DF3 * 15.0 / 2)
    assert best["ci_high"] == pytest.approx(17.5 + T_975_DF3 * 15.0 / 2)
    assert (best["wins"], best["losses"], best["ties"]) == (3, 0, 1)
    assert best["p_sign"] == pytest.approx(2 / 8)  # 3 wins of 3
    label = rows[("EP+SEM_CRIT", "EP_LABEL")]  # differences 20, 0, -10, 30
    assert label["mean"] == pytest.approx(10.0) and label["sd"] == pytest.approx(math.sqrt(1000 / 3))
    assert (label["wins"], label["losses"], label["ties"], label["p_sign"]) == (2, 1, 1, pytest.approx(1.0))
    crit = rows[("EP_CRIT", "zero_shot")]  # differences 20, 10, -10, 10: 3 wins of 4, p = 2 * 5/16
    assert crit["mean"] == pytest.approx(7.5) and crit["p_sign"] == pytest.approx(10 / 16)
    assert len(rows) == 6


def test_table3_tokens_for_reasoning_models_only(study):
    _, result = study
    rows = by(result.table("table3").rows, "model", "dataset", "strategy")
    assert {m for m, _, _ in rows} == {"mA"}  # mB reports no reasoning tokens
    # failed calls (0 tokens, error) are left out: EP_CRIT is the mean of 250 and 350
    assert rows[("mA", "d1", "EP_CRIT")]["tokens_per_question"] == pytest.approx(300)
    assert rows[("mA", "d1", "EP_CRIT")]["reduction_pct"] == pytest.approx(25)
    assert rows[("mA", "d1", "EP+SEM_CRIT")]["reduction_pct"] == pytest.approx(-25)
    assert rows[("mA", "d1", "zero_shot")]["reduction_pct"] is None
    assert result.claims["C3"]["mean_token_reduction_pct"] == pytest.approx((25 + 50 - 25 + 40 + 10 + 30) / 6)
    assert result.claims["C3"]["cells"] == 6


def test_table4_suggestibility(study):
    _, result = study
    rows = by(result.table("table4").rows, "model", "dataset")
    assert rows[("mA", "d1")]["suggestibility"] == pytest.approx(50)
    assert rows[("mA", "pref")]["acc_truth"] == pytest.approx(90)
    assert rows[("mA", "pref")]["acc_lying"] == pytest.approx(70)
    assert rows[("mB", "pref")]["suggestibility"] == pytest.approx(60)
    assert rows[("mA", "d1")]["attribution"] is None


def test_table5_costs_and_break_even(study):
    _, result = study
    costs = by(result.table("table5_costs").rows, "model", "dataset")
    assert (costs[("mA", "d1")]["init_tokens"], costs[("mA", "d1")]["critique_tokens"],
            costs[("mA", "d1")]["summary_tokens"]) == (300, 100, 40)
    assert costs[("mB", "d1")]["summary_tokens"] is None  # no summary call logged
    rows = by(result.table("table5").rows, "model", "dataset", "strategy")
    assert rows[("mA", "d1", "EP_CRIT")]["break_even"] == pytest.approx(440 / (400 - 300))  # the summary too
    assert rows[("mA", "d1", "SEM_CRIT")]["break_even"] == pytest.approx(440 / (400 - 200))
    assert rows[("mA", "d1", "EP+SEM_CRIT")]["break_even"] == "never"  # it uses more tokens than EP_LABEL
    assert rows[("mA", "pref", "EP_CRIT")]["break_even"] == pytest.approx(360 / 400)
    assert rows[("mA", "pref", "SEM_CRIT")]["break_even"] == pytest.approx(360 / 100)
    assert rows[("mA", "pref", "EP+SEM_CRIT")]["break_even"] == pytest.approx(360 / 300)
    assert {m for m, _, _ in rows} == {"mA"}


def test_ablation_tables(study):
    _, result = study
    assert result.table("table8").rows == [
        {"model": "mA", "dataset": "d1", "strategy": "EP_CRIT", "value": 3, "accuracy": pytest.approx(60), "n": 10,
         "errors": 0, "flagged": False, "source": "ablation"},
        {"model": "mA", "dataset": "d1", "strategy": "EP_CRIT", "value": 5, "accuracy": pytest.approx(70), "n": 10,
         "errors": 0, "flagged": False, "source": "plain run"}]  # the plain run's own K
    assert result.table("table8").view_columns == ["model", "dataset", "strategy", "K=3", "K=5"]
    assert "train_size" in result.table("table6").skipped
    assert "parts" in result.table("table7").skipped


def test_table9_timeouts_with_the_train_stage(study):
    _, result = study
    rows = by(result.table("table9").rows, "model", "dataset", "strategy")
    assert rows[("mA", "d1", "zero_shot")]["timeout_rate"] == pytest.approx(10)
    assert rows[("mA", "d1", "zero_shot")]["parse_fail_rate"] == pytest.approx(10)
    # pref: u1 (2 items, 1 wrong: a timeout) 50%, u2 (10 items, 7 wrong, 1 timeout) 10%
    assert rows[("mA", "pref", "zero_shot")]["timeout_rate"] == pytest.approx(30)
    assert rows[("mA", "d1", "train_predict")]["timeout_rate"] == pytest.approx(10)


def test_tables_10_11_per_user(study):
    _, result = study
    users = by(result.table("table10").rows, "model", "dataset", "strategy", "user")
    assert users[("mA", "pref", "zero_shot", "u1")]["accuracy"] == pytest.approx(50)
    assert users[("mA", "pref", "zero_shot", "u2")]["accuracy"] == pytest.approx(30)
    assert {d for _, d, _, _ in users} == {"pref"}
    summary = by(result.table("table11").rows, "model", "dataset", "strategy")
    row = summary[("mA", "pref", "zero_shot")]
    # population SD (the paper's)
    assert row["users"] == 2 and row["mean"] == pytest.approx(40) and row["sd"] == pytest.approx(10)
    view = result.table("table10").view_rows
    assert view[0]["u1"] is not None and "mean" in view[0] and "sd" in view[0]


def test_claims(study):
    _, result = study
    c = result.claims
    assert c["C1"]["vs_zero_shot"] == pytest.approx(17.5) and c["C1"]["vs_ep_label"] == pytest.approx(10.0)
    assert (c["C2"]["wins_vs_zero_shot"], c["C2"]["p_vs_zero_shot"]) == (3, pytest.approx(0.25))
    assert (c["C2"]["wins_vs_ep_label"], c["C2"]["p_vs_ep_label"]) == (2, pytest.approx(1.0))
    # S = 50, 20, 10, 60 (ranks 3 2 1 4); gains over zero_shot 30, 10, 0, 30 (ranks 3.5 2 1 3.5)
    assert c["C4"]["spearman_vs_zero_shot"] == pytest.approx(4.5 / math.sqrt(5 * 4.5))
    assert c["C4"]["spearman_vs_ep_label"] == pytest.approx(1.0)  # gains 20, 0, -10, 30: the same order
    assert c["C4"]["points_vs_zero_shot"] == 4
    assert result.claim_skips == {}


def test_a_model_declared_reasoning_counts_as_one(tmp_path):
    head = synthetic.manifest("quiet", "d1", reasoning_model=True)
    predictions = [synthetic.prediction("test", s, "t0", True, completion_tokens=100 if s == "EP_LABEL" else 80,
                                        reasoning_tokens=0) for s in ("EP_LABEL", "EP_CRIT")]
    synthetic.write_run(tmp_path / "run", head, [], predictions)
    result = tables.build(cells.from_logs(load([str(tmp_path / "run")])))
    assert result.claims["C3"]["mean_token_reduction_pct"] == pytest.approx(20)


def test_a_later_run_of_the_same_experiment_replaces_an_earlier_one(tmp_path):
    head = synthetic.manifest("m", "d1", started="2025-01-01T00:00:00Z")
    later = synthetic.manifest("m", "d1", started="2025-02-01T00:00:00Z")
    synthetic.write_run(tmp_path / "b-old", head, [], [synthetic.prediction("test", "zero_shot", "t0", False),
                                                        synthetic.prediction("test", "zero_shot", "t1", False)])
    synthetic.write_run(tmp_path / "a-new", later, [], [synthetic.prediction("test", "zero_shot", "t0", True)])
    logs = load([str(tmp_path)])
    result = tables.build(cells.from_logs(logs))
    assert result.table("table1").rows[0]["accuracy"] == pytest.approx(50)  # t0 from the later run, t1 kept
    assert any("later run" in p for p in logs.problems)


def test_nothing_to_fill_gives_one_line_per_table(tmp_path):
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "d1"), [], [])
    result = tables.build(cells.from_logs(load([str(tmp_path / "run")])))
    assert all(t.skipped for t in result.tables)
    assert all("\n" not in t.skipped for t in result.tables)
    assert set(result.claim_skips) == {"C1", "C2", "C3", "C4"}


def test_worker_processes_read_the_same_records(tmp_path):
    build_study(tmp_path)
    one = tables.build(cells.from_logs(load([str(tmp_path)], workers=1)))
    two = tables.build(cells.from_logs(load([str(tmp_path)], workers=2)))
    assert [t.rows for t in one.tables] == [t.rows for t in two.tables]
    assert one.claims == two.claims


def test_a_later_run_replaces_the_offline_calls_of_an_item_and_keeps_the_rest(tmp_path):
    old = synthetic.manifest("m", "d1", started="2025-01-01T00:00:00Z")
    new = synthetic.manifest("m", "d1", started="2025-02-01T00:00:00Z")
    train = [synthetic.prediction("train_predict", None, "r0", False, completion_tokens=7)]
    # the old run critiqued r0 twice (both count, within one run) and r1; the new run critiques r0 once
    synthetic.write_run(tmp_path / "old", old, [synthetic.call("critique", None, "r0", completion_tokens=100),
                                                synthetic.call("critique", None, "r0", completion_tokens=50),
                                                synthetic.call("critique", None, "r1", completion_tokens=20),
                                                synthetic.call("summary", None, "s", completion_tokens=9,
                                                               error="timeout")], train)
    synthetic.write_run(tmp_path / "new", new, [synthetic.call("critique", None, "r0", completion_tokens=30),
                                                synthetic.call("summary", None, "s", completion_tokens=5)], train)
    logs = load([str(tmp_path)])
    costs = tables.build(cells.from_logs(logs)).table("table5_costs").rows
    assert costs == [{"model": "m", "dataset": "d1", "init_tokens": 7, "critique_tokens": 50, "summary_tokens": 5,
                      "total": 62, "init_prompt_tokens": 0, "critique_prompt_tokens": 4, "summary_prompt_tokens": 2,
                      "prompt_total": 6, "dollars": None}]
    # r0: 30 (new run), r1: 20 (only the old run has it); the failed summary is out
    assert logs.records("calls") == 3 and logs.records("predictions") == 1
    assert "1 prediction records repeat" in " ".join(logs.problems)
    assert "2 call records repeat" in " ".join(logs.problems)


def test_odd_records_are_counted_as_the_tables_see_them(tmp_path):
    head = synthetic.manifest("m", "d1")
    nan = float("nan")
    predictions = [
        # one item answered twice under two user values: single-kind data has no users, so the later one counts
        synthetic.prediction("test", "zero_shot", "t0", True, user="a", completion_tokens=10, reasoning_tokens=1),
        synthetic.prediction("test", "zero_shot", "t0", False, user="b", completion_tokens=30, reasoning_tokens=1),
        # a NaN token count is no count; an item id that is a list is still an item
        synthetic.prediction("test", "zero_shot", ["t", 1], True, completion_tokens=nan, reasoning_tokens=1),
    ]
    synthetic.write_run(tmp_path / "run", head, [], predictions)
    result = tables.build(cells.from_logs(load([str(tmp_path / "run")])))
    low, high = intervals.wilson(1, 2)
    assert result.table("table1").rows == [{"model": "m", "dataset": "d1", "strategy": "zero_shot",
                                            "accuracy": 50.0, "ci_low": low, "ci_high": high, "ci_method": "wilson",
                                            "n": 2, "errors": 0, "flagged": False,
                                            "majority": 50.0}]  # gold B (t0, later record) and A: a tie, A first
    assert result.table("table3").rows[0]["tokens_per_question"] == 30.0


def test_a_repeated_experiment_whose_other_run_cannot_be_read_is_still_counted(tmp_path):
    for name, started in (("old", "2025-01-01T00:00:00Z"), ("new", "2025-02-01T00:00:00Z")):
        synthetic.write_run(tmp_path / name, synthetic.manifest("m", "d1", started=started), [],
                            [synthetic.prediction("test", "zero_shot", "t0", name == "old")])
    (tmp_path / "new" / "predictions.jsonl").unlink()
    (tmp_path / "new" / "predictions.jsonl").mkdir()  # reading it fails: the run is left out
    logs = load([str(tmp_path)])
    assert any("cannot read its logs" in e for e in logs.errors)
    assert tables.build(cells.from_logs(logs)).table("table1").rows[0]["accuracy"] == 100.0
