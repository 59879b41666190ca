"""Tables that never mislead (issue 14, part 1): runs with other settings are kept apart, errors are
in sight and never parse failures, every output says what it read, a Learner's folder is no study
point, and the majority-class baseline sits beside zero_shot. Fake provider, real pipeline."""

import json

import pytest

from critique.analysis import synthetic
from critique.analysis.__main__ import main as analysis_main
from critique.base import rundir
from critique.cli import main


def run(out, *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "5", "--out", str(out),
                 "--quiet", *extra])


def tables(capsys, *argv):
    code = analysis_main(["tables", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def table1(capsys, *runs) -> dict:
    code, out, err = tables(capsys, *runs, "--format", "json")
    assert code == 0, err
    return {(r["model"], r["strategy"]): r for r in json.loads(out)["table1"]}


def test_runs_with_other_settings_are_kept_apart_and_named(home, fake_llm, capsys):
    default, other, more = home / "default", home / "k1", home / "default-again"
    assert run(default) == 0
    assert run(other, "--k", "1", "--temperature", "0.7", "--strategies", "EP_CRIT") == 0
    assert run(more, "--strategies", "EP_CRIT", "--seed", "0") == 0  # the same settings: one experiment
    capsys.readouterr()
    alone = {name: table1(capsys, path) for name, path in (("default", default), ("k1", other))}
    code, out, err = tables(capsys, default, other, more, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    rows = {(r["model"], r["strategy"]): r for r in data["table1"]}
    k5, k1 = "fake/model [k=5, temperature=0.0]", "fake/model [k=1, temperature=0.7]"
    assert {m for m, _ in rows} == {k5, k1}
    assert rows[(k1, "EP_CRIT")]["accuracy"] == alone["k1"][("fake/model", "EP_CRIT")]["accuracy"]
    assert rows[(k5, "EP_CRIT")]["accuracy"] == alone["default"][("fake/model", "EP_CRIT")]["accuracy"]
    assert rows[(k5, "EP_CRIT")]["n"] == 5  # the rerun with the same settings is the same experiment: no double count
    assert "runs with different k, temperature are kept apart (plain run [k=5, temperature=0.0]; plain run [k=1, " \
           "temperature=0.7])" in err
    experiments = {e["shown_as"]: e for e in data["inputs"]["experiments"]}
    assert experiments[k1]["settings"]["k"] == 1 and experiments[k1]["runs"] == [str(other)]
    assert experiments[k5]["runs"] == [str(default), str(more)]
    code, markdown, _ = tables(capsys, default, other, more)
    assert f"| {k1} | mcr-gen | 5 |" in markdown
    assert "## Inputs: the experiments read" in markdown and f"| {k1} | mcr-gen | plain run | k=1, " in markdown


def test_an_all_error_strategy_is_flagged_and_the_run_exits_non_zero(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_FAIL", "answer")
    out = home / "failing"
    assert run(out, "--strategies", "zero_shot,EP_CRIT", "--retries", "0") == 1
    err = capsys.readouterr().err
    assert "predictions ended in an error (10 in test, 5 in train_predict)" in err
    predictions = rundir.latest(rundir.read_run(out)["predictions"])
    assert predictions and all(p["error"] and p["parse_failed"] is False and p["answer"] is None for p in predictions)
    code, text, _ = tables(capsys, out, "--format", "json")
    data = json.loads(text)
    assert [(r["strategy"], r["accuracy"], r["errors"], r["flagged"]) for r in data["table1"]] == [
        ("zero_shot", 0.0, 5, True), ("EP_CRIT", 0.0, 5, True)]
    table9 = {r["strategy"]: r for r in data["table9"]}
    assert table9["zero_shot"]["parse_fail_rate"] == 0.0 and table9["zero_shot"]["error_rate"] == 100.0
    assert table9["train_predict"]["errors"] == 5
    code, text, _ = tables(capsys, out)
    assert "| 0.0 (5 err) | 0.0 (5 err) |" in text
    assert "not an answer of the model" in text


def test_errors_in_old_logs_are_not_parse_failures(tmp_path):
    from critique.analysis.study import cells, tables as build
    from critique.analysis.reading.load import load

    head = synthetic.manifest("m", "d1")
    predictions = [synthetic.prediction("test", "zero_shot", f"t{i}", i < 2, parse_failed=i >= 2,
                                        error="boom" if i >= 3 else None) for i in range(5)]
    synthetic.write_run(tmp_path / "run", head, [], predictions)
    result = build.build(cells.from_logs(load([str(tmp_path / "run")])))
    row = result.table("table9").rows[0]
    assert (row["parse_fail_rate"], row["error_rate"], row["errors"]) == (20.0, 40.0, 2)
    assert result.table("table1").rows[0]["flagged"] is True


def test_a_learner_folder_is_not_a_study_point(home, fake_llm, capsys):
    from critique import Learner

    fitted = home / "learner"
    Learner("fake/model", task="Is it true?", answer_space=["yes", "no"], out=fitted, progress=False, k=2).fit(
        [("Water is wet.", "yes"), ("Fire is cold.", "no"), ("Snow is white.", "yes")])
    assert json.loads((fitted / rundir.MANIFEST).read_text())["learner"] is True
    plain = home / "plain"
    assert run(plain, "--strategies", "zero_shot,EP+SEM_CRIT") == 0  # every train stage: Table 5 has costs
    assert json.loads((plain / rundir.MANIFEST).read_text())["learner"] is False
    capsys.readouterr()
    code, out, err = tables(capsys, home, "--format", "json")
    assert code == 0
    assert "a critique.Learner's folder has no test split, so no table" in err and f"left out: {fitted}" in err
    data = json.loads(out)
    assert [e["runs"] for e in data["inputs"]["experiments"]] == [[str(plain)]]
    assert {r["dataset"] for r in data["table5_costs"]} == {"mcr-gen"}
    assert {r["dataset"] for r in data["table9"]} == {"mcr-gen"}


@pytest.mark.parametrize("train_golds, test_golds, expected", [
    (["A", "A", "B"], ["A", "B", "B", "B"], 25.0),  # the train split's majority (A), scored on test
    ([], ["A", "B", "B", "B"], 75.0),  # no train predictions: the test split's own majority
    (["A", "B"], ["B", "B", "A", "A", "A"], 60.0),  # a tie in train: the first label (A)
])
def test_majority_baseline(tmp_path, train_golds, test_golds, expected):
    from critique.analysis.study import cells
    from critique.analysis.reading.load import load

    predictions = [synthetic.prediction("train_predict", None, f"r{i}", True, gold=g) for i, g in
                   enumerate(train_golds)]
    predictions += [synthetic.prediction("test", s, f"t{i}", True, gold=g) for s in ("zero_shot", "EP_CRIT")
                    for i, g in enumerate(test_golds)]
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "d"), [], predictions)
    rows = cells.from_logs(load([str(tmp_path / "run")])).accuracy
    assert {r["majority"] for r in rows} == {expected}


def test_majority_baseline_per_user_is_averaged_over_users(tmp_path):
    from critique.analysis.study import cells
    from critique.analysis.reading.load import load

    golds = {"u1": ["A", "A", "B", "A"], "u2": ["B", "A"]}  # test majority: A 75%, then a tie (A first) 50%
    predictions = [synthetic.prediction("test", "zero_shot", f"t{i}", True, user=u, gold=g)
                   for u, gs in golds.items() for i, g in enumerate(gs)]
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "p", kind="preference"), [], predictions)
    rows = cells.from_logs(load([str(tmp_path / "run")])).accuracy
    assert rows[0]["majority"] == pytest.approx(62.5)


def test_a_limit_at_or_below_k_warns_that_retrieval_chooses_nothing(home, fake_llm, capsys):
    assert run(home / "small", "--k", "5", "--strategies", "zero_shot,EP_CRIT") == 0
    err = capsys.readouterr().err
    assert "warning: the train pool holds 5 items and k = 5: every test question of it retrieves the whole pool" in err
    assert run(home / "fine", "--k", "3", "--strategies", "zero_shot,EP_CRIT") == 0
    assert "retrieves the whole pool" not in capsys.readouterr().err


def plain_run(path, model="m", dataset="d", right=(3, 3, 3, 3, 3), probe=None, n=5, **config):
    """A synthetic run: per strategy (in the study's order) `right[i]` of `n` test items correct."""
    head = synthetic.manifest(model, dataset, probe=probe, run_id=path.name,
                              started=f"2025-01-0{len(path.name) % 9 + 1}")
    head["config"].update(config)
    strategies = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]
    if probe:
        predictions = [synthetic.prediction("probe", arm, f"t{i}", i < k) for arm, k in (("truth", 4), ("lying", 1))
                       for i in range(n)]
    else:
        predictions = [synthetic.prediction("test", s, f"t{i}", i < k) for s, k in zip(strategies, right)
                       for i in range(n)]
    return synthetic.write_run(path, head, [], predictions)


def test_seed_repeats_are_one_point_and_other_settings_are_other_experiments_of_table2(tmp_path, capsys):
    plain_run(tmp_path / "s0", seed=0, right=(1, 1, 2, 2, 3))
    plain_run(tmp_path / "s1", seed=1, right=(1, 1, 4, 4, 5))
    plain_run(tmp_path / "o", model="o", right=(1, 1, 2, 2, 2))
    plain_run(tmp_path / "ok", model="o", k=1, right=(2, 2, 2, 2, 2))
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    data = json.loads(out)
    rows = {(r["condition"], r["critique"], r["baseline"]): r for r in data["table2"]}
    # k=5 (the default): m, one point, the mean over its two seeds (EP+SEM_CRIT 80% vs zero_shot 20%), and o;
    # k=1: o's other experiment, never pooled with its k=5 one
    default, other = rows[("k=5", "EP+SEM_CRIT", "zero_shot")], rows[("k=1", "EP+SEM_CRIT", "zero_shot")]
    assert (default["n"], default["mean"]) == (2, 40.0) and (other["n"], other["mean"]) == (1, 0.0)
    note = data["notes"]["table2"]
    assert "k=5: m / d: one point, the mean over 2 seeds" in note
    assert data["claims"]["C1"]["points_vs_zero_shot"] == 2 and data["claims"]["C1"]["condition"] == "k=5"
    assert data["claims"]["C1 [k=1]"]["points_vs_zero_shot"] == 1


def test_a_probe_is_compared_only_with_the_plain_run_of_its_settings(tmp_path, capsys):
    plain_run(tmp_path / "plain", temperature=0.0)
    plain_run(tmp_path / "probe", probe={"name": "suggestibility", "attribution": ""}, temperature=0.7)
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    data = json.loads(out)
    assert {r["model"] for r in data["table1"]} == {"m [temperature=0.0]"}
    assert {r["model"] for r in data["table4"]} == {"m [temperature=0.7]"}
    assert "runs with different temperature are kept apart" in err


@pytest.mark.parametrize("setting, values", [("api_base", ["http://a:1", "http://b:2"])])
def test_other_endpoints_or_weights_are_other_experiments(tmp_path, capsys, setting, values):
    for i, value in enumerate(values):
        plain_run(tmp_path / f"r{i}", **{setting: value})
    head = json.loads((tmp_path / "r1" / rundir.MANIFEST).read_text())
    head["local_model"] = {"file": "other.gguf"}
    (tmp_path / "r1" / rundir.MANIFEST).write_text(json.dumps(head))
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    assert len({r["model"] for r in json.loads(out)["table1"]}) == 2
    assert "endpoint, weights are kept apart" in err


def test_inference_on_unreadable_or_odd_logs_leaves_them_out_without_a_traceback(tmp_path, capsys):
    plain_run(tmp_path / "good")
    broken = plain_run(tmp_path / "broken", model="b")
    (broken / rundir.PREDICTIONS).unlink()
    (broken / rundir.PREDICTIONS).mkdir()
    odd = plain_run(tmp_path / "odd", model="x")
    lines = (odd / rundir.PREDICTIONS).read_text().splitlines()
    record = json.loads(lines[0])
    record.update(strategy=["a list"], item_id={"an": "object"})
    (odd / rundir.PREDICTIONS).write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    code, out, err = tables(capsys, tmp_path, "--inference")
    assert code == 1 and "Traceback" not in err and "broken" in err and "left out" in err
    assert "# Item-level inference" in out and "## Input problems" in out
    assert analysis_main(["export", str(tmp_path), "--to", str(tmp_path / "x")]) == 1


def test_an_all_wrong_strategy_leaves_the_pooled_model_for_the_others(tmp_path, capsys):
    plain_run(tmp_path / "a", right=(2, 3, 3, 0, 4), n=8)
    plain_run(tmp_path / "b", model="n", right=(3, 3, 4, 0, 5), n=8)
    code, out, _ = tables(capsys, tmp_path, "--inference", "--format", "json")
    pooled = {(r["strategy"], r["baseline"]): r for r in json.loads(out)["inference"]["pooled"]}
    assert pooled[("SEM_CRIT", "zero_shot")]["odds_ratio"] is None
    assert "perfect separation" in pooled[("SEM_CRIT", "zero_shot")]["method"]
    assert pooled[("EP+SEM_CRIT", "zero_shot")]["odds_ratio"] > 1


def test_a_learner_folder_without_its_mark_is_still_no_study_point_but_exports(tmp_path, capsys):
    plain_run(tmp_path / "plain")
    old = plain_run(tmp_path / "fit", model="f")
    head = json.loads((old / rundir.MANIFEST).read_text())
    del head["learner"]
    head["dataset"]["n_test"] = 0  # a fit has no test split
    (old / rundir.MANIFEST).write_text(json.dumps(head))
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    assert {r["model"] for r in json.loads(out)["table1"]} == {"m"} and "critique.Learner's" in err
    assert analysis_main(["export", str(old), "--to", str(tmp_path / "x"), "--tables", "predictions"]) == 0


def test_context_overflows_are_counted_wrong_and_shown_in_table9(tmp_path):
    from critique.analysis.study import cells, tables as build
    from critique.analysis.reading.load import load

    predictions = [synthetic.prediction("test", "EP_CRIT", f"t{i}", i < 2, context_overflow=i >= 3, answer=None)
                   for i in range(5)]
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "d"), [], predictions)
    result = build.build(cells.from_logs(load([str(tmp_path / "run")])))
    row = result.table("table9").rows[0]
    assert (row["overflow_rate"], row["overflows"], row["parse_fail_rate"], row["errors"]) == (40.0, 2, 0.0, 0)
    assert result.table("table1").rows[0]["accuracy"] == 40.0
    assert "(2 overflow)" in str(result.table("table9").view_rows[0]["EP_CRIT"])


def test_mismatch_rate_and_probe_delivery(tmp_path, capsys):
    run = plain_run(tmp_path / "plain")
    (run / rundir.MEMORY).mkdir()
    synthetic.write_jsonl(run / rundir.MEMORY / "episodic.jsonl",
                          [{"id": f"e{i}", "assertion_mismatch": i < 3} for i in range(4)])
    head = synthetic.manifest("m", "d", probe={"name": "suggestibility", "attribution": ""}, run_id="probe")
    # truth: 4 delivered (3 right), 1 not; lying: 2 delivered (0 right), 3 not delivered (2 right)
    arms = [("truth", [True] * 4 + [False], [True, True, True, False, True]),
            ("lying", [True, True, False, False, False], [False, False, True, True, False])]
    predictions = [{**synthetic.prediction("probe", arm, f"t{i}", right[i]), "delivered": delivered[i]}
                   for arm, delivered, right in arms for i in range(5)]
    synthetic.write_run(tmp_path / "probe", head, [], predictions)
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    data = json.loads(out)
    assert data["mismatch"] == [{"model": "m", "dataset": "d", "entries": 4, "mismatches": 3, "mismatch_rate": 75.0}]
    row = data["table4"][0]
    assert (row["delivered_truth"], row["delivered_lying"]) == (80.0, 40.0)
    assert row["suggestibility"] == 80.0 - 40.0 and row["suggestibility_delivered"] == 75.0 - 0.0
