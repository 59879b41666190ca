"""What a reader of the tables needs besides the paper's numbers: the break-even on the whole train stage,
prompt tokens beside completion tokens, an interval per Table 1 cell, the plain run's own K in the K table,
and the settings that differ from the documented defaults."""

import json

import pytest

from critique.analysis import synthetic
from critique.analysis.study import cells, csv_input, defaults, intervals, render, tables
from critique.analysis.reading.load import load
from critique.analysis.reading.read import describe
from test_analysis_helpers import build_study


def by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_break_even_of_ep_crit_pays_the_summary_too(tmp_path):
    # tokens shaped like the paper's GPT-5 / Book Pref example: 977 queries with the summary, 921 without
    (tmp_path / "r.csv").write_text("model,dataset,strategy,accuracy,tokens_per_question\n"
                                    "g,b,EP_LABEL,50,1000\ng,b,EP_CRIT,50,900\n")
    (tmp_path / "c.csv").write_text("model,dataset,init_tokens,critique_tokens,summary_tokens\ng,b,42100,50000,5600\n")
    found = csv_input.read_cells(results=str(tmp_path / "r.csv"), costs=str(tmp_path / "c.csv"))
    rows = {r["strategy"]: r for r in tables.table5(found).rows}
    assert rows["EP_CRIT"]["offline_tokens"] == 97700
    assert rows["EP_CRIT"]["break_even"] == pytest.approx(977)
    assert rows["EP_CRIT"]["break_even_total"] is None  # no prompt tokens in the CSVs: no total-token figure


def prompt_run(root):
    """A reasoning model's run whose records report prompt tokens: test EP_LABEL 1,000 prompt / 400 completion,
    EP_CRIT 1,200 / 300; train stage 100 prompt / 10 completion per item (2 items), critiques 300 / 50 (2),
    a summary 900 / 40."""
    predictions = [synthetic.prediction("test", s, f"t{i}", True, prompt_tokens=p, completion_tokens=c,
                                        reasoning_tokens=c // 2)
                   for s, p, c in (("EP_LABEL", 1000, 400), ("EP_CRIT", 1200, 300)) for i in range(2)]
    predictions += [synthetic.prediction("train_predict", None, f"r{i}", False, prompt_tokens=100,
                                         completion_tokens=10) for i in range(2)]
    calls = [synthetic.call("critique", None, f"r{i}", None, 50, 0, "m", prompt="w" * 1200) for i in range(2)]
    calls.append(synthetic.call("summary", None, None, None, 40, 0, "m", prompt="w" * 3600))
    return synthetic.write_run(root / "m__d", synthetic.manifest("m", "d", reasoning_model=True), calls, predictions)


def test_prompt_tokens_beside_completion_tokens_and_the_total_token_break_even(tmp_path):
    prompt_run(tmp_path)
    result = tables.build(cells.from_logs(load([str(tmp_path)])))
    t3 = {r["strategy"]: r for r in result.table("table3").rows}
    assert t3["EP_LABEL"]["prompt_tokens_per_question"] == pytest.approx(1000)
    assert t3["EP_CRIT"]["prompt_tokens_per_question"] == pytest.approx(1200)
    assert result.table("table3").view_columns == ["model", "dataset", "EP_LABEL", "EP_LABEL (prompt)", "EP_CRIT",
                                                   "EP_CRIT (prompt)"]
    costs = result.table("table5_costs").rows[0]
    assert (costs["init_prompt_tokens"], costs["critique_prompt_tokens"], costs["summary_prompt_tokens"]) == \
        (200, 600, 900)
    assert costs["prompt_total"] == 1700 and costs["total"] == 20 + 100 + 40
    even = {r["strategy"]: r for r in result.table("table5").rows}["EP_CRIT"]
    assert even["break_even"] == pytest.approx(160 / 100)  # completion tokens, as the paper
    assert even["offline_total_tokens"] == 160 + 1700
    assert even["saving_total_per_query"] == pytest.approx(1400 - 1500)
    assert even["break_even_total"] == "never"  # its longer prompts cost more than its shorter answers save


def test_table1_gives_an_interval_per_cell(tmp_path):
    build_study(tmp_path)
    table = tables.table1(cells.from_logs(load([str(tmp_path)])))
    rows = by(table.rows, "model", "dataset", "strategy")
    single = rows[("mA", "d1", "EP_CRIT")]  # 7 of 10 right
    assert single["ci_method"] == intervals.WILSON
    assert (single["ci_low"], single["ci_high"]) == (pytest.approx(39.6778, abs=1e-4), pytest.approx(89.2208, abs=1e-4))
    users = rows[("mA", "pref", "zero_shot")]  # users at 50% and 30%: the mean over users resampled by user
    assert users["ci_method"] == intervals.CLUSTER
    assert users["ci_low"] == pytest.approx(30) and users["ci_high"] == pytest.approx(50)
    shown = by(table.view_rows, "model", "dataset")[("mA", "d1")]["EP_CRIT"]
    assert shown.startswith("70.0 [39.7, 89.2]")
    assert "Wilson" in table.note and "cluster bootstrap over users" in table.note


def test_the_k_table_shows_the_plain_runs_own_k(tmp_path):
    build_study(tmp_path)  # one K ablation run (k=3); the plain run has k=5
    table = tables.build(cells.from_logs(load([str(tmp_path)]))).table("table8")
    assert table.view_columns == ["model", "dataset", "strategy", "K=3", "K=5"]
    rows = {r["value"]: r for r in table.rows}
    assert rows[5]["source"] == "plain run" and rows[5]["accuracy"] == pytest.approx(70)
    assert rows[3]["source"] == "ablation"
    assert "K=5 of mA / d1: the plain run's own K" in table.note


def test_every_output_states_the_settings_that_differ_from_the_defaults(tmp_path):
    head = synthetic.manifest("local/smollm2", "d")
    head["config"]["max_tokens"] = 512
    head["local_model"] = {"file": "tiny.gguf", "weights": "f16", "flash_attn": True, "max_string_chars": 80,
                           "n_ctx": 8192}
    synthetic.write_run(tmp_path / "run", head, [], [synthetic.prediction("test", "zero_shot", "t0", True)])
    logs = load([str(tmp_path)])
    result = tables.build(cells.from_logs(logs))
    experiments = describe(logs.runs)
    text = render.markdown(result, "h", experiments=experiments)
    assert f"## {defaults.TITLE}" in text
    assert "- max_tokens = 512 in 1 of 1 run directory (documented default: 8192)" in text
    assert "reasoning_effort = medium" in text  # synthetic manifests set it; its default is unset
    assert "160 (correct_answer), 320 (local_reason) and 240 (global_reason) characters" in text
    assert "advice of at most 5 lines of 120 characters" in text and "at most 80 characters" in text
    data = json.loads(render.to_json(result, {"experiments": experiments}, [], []))
    assert any(line.startswith("max_tokens = 512") for line in data["nondefault_settings"])


def test_no_settings_section_when_every_setting_is_the_default(tmp_path):
    head = synthetic.manifest("m", "d")
    head["config"]["reasoning_effort"] = None
    synthetic.write_run(tmp_path / "run", head, [], [synthetic.prediction("test", "zero_shot", "t0", True)])
    logs = load([str(tmp_path)])
    assert defaults.lines(describe(logs.runs)) == []


def test_claims_say_one_point_not_one_points():
    c1 = {"vs_zero_shot": 1.0, "points_vs_zero_shot": 1, "vs_ep_label": 2.0, "points_vs_ep_label": 2}
    text = render.claim_text("C1", c1)
    assert "(1 point)" in text and "(2 points)" in text and "1 points" not in text
    c3 = {"mean_token_reduction_pct": 10.0, "cells": 1}
    assert "over 1 reasoning-model x dataset x strategy cell;" in render.claim_text("C3", c3)
