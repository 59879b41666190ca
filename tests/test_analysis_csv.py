"""Per-cell CSV input: the pooled statistics of a published table, recomputed; bad CSVs reported."""

import json

import pytest

from critique.analysis.__main__ import main
from test_analysis_helpers import ACCURACY, OFFLINE, SUGGESTIBILITY, TOKENS, build_study

T_975_DF3 = 3.182446305284263


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def csvs(tmp_path):
    """The small study's numbers as a paper would print them (mA is the reasoning model)."""
    lines = ["model,dataset,strategy,accuracy,tokens_per_question,timeout_rate"]
    for (model, dataset), cells in ACCURACY.items():
        for strategy, accuracy in cells.items():
            tokens = TOKENS.get((model, dataset), {}).get(strategy)
            shown = "Zero-shot" if strategy == "zero_shot" else strategy  # a paper's spelling
            lines.append(f"{model},{dataset},{shown},{accuracy},{sum(tokens) / 2 if tokens else ''},1.5")
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    rows = [f"{m},{d},{truth},{lying}" for (m, d), (truth, lying) in SUGGESTIBILITY.items()]
    (tmp_path / "s.csv").write_text("model,dataset,acc_truth,acc_lying\n" + "\n".join(rows) + "\n")
    rows = [f"{m},{d},{sum(c['train_predict'])},{sum(c['critique'])},{sum(c['summary'])}"
            for (m, d), c in OFFLINE.items()]
    (tmp_path / "c.csv").write_text("model,dataset,init_tokens,critique_tokens,summary_tokens\n" + "\n".join(rows))
    return tmp_path


def test_pooled_statistics_from_csv(csvs, capsys):
    code, out, err = run(capsys, "tables", "--results", csvs / "results.csv", "--suggestibility", csvs / "s.csv",
                         "--costs", csvs / "c.csv", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["source"] == "csv"
    best = {(r["critique"], r["baseline"]): r for r in data["table2"]}[("EP+SEM_CRIT", "zero_shot")]
    assert best["mean"] == pytest.approx(17.5) and best["sd"] == pytest.approx(15.0)
    assert best["ci_high"] == pytest.approx(17.5 + T_975_DF3 * 7.5)
    assert (best["wins"], best["losses"], best["ties"], best["p_sign"]) == (3, 0, 1, pytest.approx(0.25))
    claims = data["claims"]
    assert claims["C1"]["vs_ep_label"] == pytest.approx(10.0)
    assert claims["C3"]["mean_token_reduction_pct"] == pytest.approx(130 / 6)
    assert claims["C4"]["spearman_vs_zero_shot"] == pytest.approx(4.5 / (5 * 4.5) ** 0.5)
    assert {r["model"] for r in data["table3"]} == {"mA"}  # rows with tokens_per_question are the reasoning rows
    even = {(r["dataset"], r["strategy"]): r["break_even"] for r in data["table5"]}
    assert even[("d1", "EP_CRIT")] == pytest.approx(4.4) and even[("d1", "EP+SEM_CRIT")] == "never"  # summary paid
    assert data["table9"][0]["timeout_rate"] == pytest.approx(1.5)
    assert "preference" in data["skipped"]["table10"]


def test_markdown_from_csv_says_where_it_came_from(csvs, capsys):
    code, out, _ = run(capsys, "tables", "--results", csvs / "results.csv")
    assert code == 0
    assert out.startswith("# Study tables\n\nFrom per-cell CSV numbers: results = ")
    assert "Skipped: no suggestibility probe" in out


def test_missing_columns_are_named_and_the_rest_analysed(csvs, capsys):
    (csvs / "bad.csv").write_text("model,dataset,acc_truth\nm,d,50\n")
    code, out, err = run(capsys, "tables", "--results", csvs / "results.csv", "--suggestibility", csvs / "bad.csv")
    assert code == 1
    assert f"{csvs / 'bad.csv'}: missing column(s) acc_lying (needs model,dataset,acc_truth,acc_lying" in err
    assert "## Table 2." in out and "| EP+SEM_CRIT | zero_shot | 4 | 17.5 |" in out


def test_a_csv_that_cannot_be_used_alone_is_an_error(csvs, capsys):
    (csvs / "bad.csv").write_text("model,dataset,score\nm,d,50\n")
    code, out, err = run(capsys, "tables", "--results", csvs / "bad.csv")
    assert code == 2 and out == ""
    assert "missing column(s) strategy, accuracy" in err
    code, _, err = run(capsys, "tables", "--results", csvs / "absent.csv")
    assert code == 2 and "absent.csv: no such file" in err


def test_bad_values_are_reported_and_left_out(csvs, capsys):
    text = (csvs / "results.csv").read_text().replace("mB,d1,EP_CRIT,60", "mB,d1,EP_CRIT,n/a")
    (csvs / "r2.csv").write_text(text + "mA,d1,EP_CRIT,99,,\n")
    code, out, err = run(capsys, "tables", "--results", csvs / "r2.csv", "--format", "json")
    assert code == 0
    assert "column accuracy: not a number on line(s) 14" in err
    assert "line(s) 22 repeat a (model, dataset, strategy) row; the first one is used" in err
    rows = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in json.loads(out)["table1"]}
    assert ("mB", "d1", "EP_CRIT") not in rows and rows[("mA", "d1", "EP_CRIT")] == 70


def test_fractions_instead_of_percent_are_flagged(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("model,dataset,strategy,accuracy\nm,d,zero_shot,0.5\nm,d,EP_LABEL,0.6\n")
    code, _, err = run(capsys, "tables", "--results", tmp_path / "r.csv")
    assert code == 0 and "must be percent" in err


def test_logs_compared_with_published_numbers(csvs, tmp_path, capsys):
    build_study(tmp_path / "runs")
    code, out, err = run(capsys, "tables", tmp_path / "runs", "--results", csvs / "results.csv", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["source"] == "logs" and data["published"]["source"] == "csv"
    assert len(data["comparison"]) == 20 and all(r["diff"] == pytest.approx(0) for r in data["comparison"])
    claims = {(r["claim"], r["quantity"]): r for r in data["claims_comparison"]}
    assert claims[("C1", "vs_zero_shot")]["logs"] == pytest.approx(claims[("C1", "vs_zero_shot")]["published"])
    code, out, _ = run(capsys, "tables", tmp_path / "runs", "--results", csvs / "results.csv")
    assert "## Comparison of Table 1 with the published numbers" in out


def test_two_spellings_of_one_strategy_are_one_row(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("model,dataset,strategy,accuracy\nm,d,zero_shot,50\nm,d,Zero-shot,60\n"
                                    "m,d,EP+SEM_CRIT,70\n")
    code, out, err = run(capsys, "tables", "--results", tmp_path / "r.csv", "--format", "json")
    assert code == 0 and "line(s) 3 repeat" in err
    assert [r["accuracy"] for r in json.loads(out)["table1"]] == [50, 70]


def test_line_numbers_are_the_files_own_and_a_long_row_is_refused(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("model,dataset,strategy,accuracy\n\nm,d,zero_shot,50\n\nm,d,EP_LABEL,x\n")
    code, _, err = run(capsys, "tables", "--results", tmp_path / "r.csv")
    assert code == 0 and "not a number on line(s) 5" in err
    (tmp_path / "long.csv").write_text("model,dataset,strategy,accuracy\nm,d,zero_shot,50\nm,d,EP_LABEL,60,7\n")
    code, out, err = run(capsys, "tables", "--results", tmp_path / "long.csv")
    assert code == 2 and out == ""
    assert "long.csv: not a readable CSV (more cells than the header has columns on line(s) 3)" in err


def test_spreadsheet_exports_are_read(tmp_path, capsys):
    # a byte-order mark, trailing empty cells, whole numbers, and a row of empty cells
    (tmp_path / "r.csv").write_bytes("\ufeffmodel,dataset,strategy,accuracy,\nm,d,zero_shot,50,\nm,d,EP_LABEL,60.5,,\n"
                                     ",,,,\nm,d,SEM_CRIT,1_000\n".encode("utf-8"))
    code, out, err = run(capsys, "tables", "--results", tmp_path / "r.csv", "--format", "json")
    assert code == 0, err
    assert [(r["strategy"], r["accuracy"]) for r in json.loads(out)["table1"]] == [("zero_shot", 50),
                                                                                  ("EP_LABEL", 60.5)]
    assert "not a number on line(s) 5" in err and "line(s) 4, 5 lack a value" in err
