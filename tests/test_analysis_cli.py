"""`critique tables` / `critique report` end to end: output formats, bad inputs, import hygiene."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from critique.analysis import synthetic
from critique.analysis.__main__ import main
from test_analysis_helpers import build_study

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    build_study(root)
    return root


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_documented_keys(study_dir, capsys):
    code, out, err = run(capsys, "tables", *sorted(study_dir.iterdir()), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["table1"][0]) >= {"model", "dataset", "strategy", "accuracy"}
    assert set(data["table2"][0]) >= {"critique", "baseline", "mean", "sd", "ci_low", "ci_high", "wins", "losses",
                                      "ties", "p_sign"}
    assert set(data["table4"][0]) >= {"model", "dataset", "acc_truth", "acc_lying", "suggestibility"}
    assert set(data["table5"][0]) >= {"model", "dataset", "strategy", "break_even"}
    assert {r["break_even"] for r in data["table5"]} & {"never"}
    assert set(data["claims"]["C1"]) >= {"vs_zero_shot", "vs_ep_label"}
    assert set(data["claims"]["C2"]) >= {"wins_vs_zero_shot", "p_vs_zero_shot", "wins_vs_ep_label", "p_vs_ep_label"}
    assert set(data["claims"]["C3"]) >= {"mean_token_reduction_pct"}
    assert set(data["claims"]["C4"]) >= {"spearman_vs_zero_shot", "p_vs_zero_shot", "spearman_vs_ep_label",
                                         "p_vs_ep_label"}
    assert data["table6"] is None and "train_size" in data["skipped"]["table6"]
    assert data["claims"]["C1"]["vs_zero_shot"] == pytest.approx(17.5)


def test_markdown_names_every_table_and_skips_in_one_line(study_dir, capsys):
    code, out, _ = run(capsys, "tables", study_dir)  # a folder of runs counts as its runs
    assert code == 0
    for n in range(1, 12):
        assert f"## Table {n}" in out
    assert "Skipped: no ablation runs with manifest.ablation.name == 'train_size'" in out
    assert ("| mA | d1 | 10 | 50.0 | 50.0 [23.7, 76.3] | 60.0 [31.3, 83.2] | 70.0 [39.7, 89.2] | 50.0 [23.7, 76.3] | "
            "80.0 [49.0, 94.3] |") in out  # each accuracy with its 95% Wilson interval
    assert "- **C1** mean gain of EP+SEM_CRIT: +17.50 points over zero_shot" in out


def test_output_file(study_dir, tmp_path, capsys):
    code, out, _ = run(capsys, "tables", study_dir, "-o", tmp_path / "t.md")
    assert code == 0 and out == ""
    assert (tmp_path / "t.md").read_text().startswith("# Study tables")


def test_no_input_is_a_usage_error(capsys):
    code, _, err = run(capsys, "tables")
    assert code == 2 and "nothing to analyse" in err


def test_a_folder_that_is_not_a_run_is_left_out_and_the_rest_analysed(study_dir, tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    code, out, err = run(capsys, "tables", study_dir, tmp_path / "notes", tmp_path / "absent")
    assert code == 1
    assert f"{tmp_path / 'notes'}: not a run directory" in err
    assert f"{tmp_path / 'absent'}: no such file or directory" in err
    assert "## Table 1." in out and "| mA | d1 | 10 | 50.0 | 50.0 [23.7, 76.3] |" in out


def test_only_bad_inputs_is_an_error(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    code, out, err = run(capsys, "tables", tmp_path / "notes")
    assert code == 2 and out == "" and "no readable run directory" in err


def test_unreadable_manifest_is_left_out(study_dir, tmp_path, capsys):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("{not json")
    code, out, err = run(capsys, "tables", study_dir, tmp_path / "broken")
    assert code == 1 and "unreadable manifest.json" in err and "| mA | d1 | 10 | 50.0 | 50.0 [23.7, 76.3] |" in out


def test_manifest_without_model_is_left_out(study_dir, tmp_path, capsys):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text('{"config": {}, "dataset": {"name": "d1"}}')
    code, out, err = run(capsys, "tables", study_dir, tmp_path / "old")
    assert code == 1 and "manifest.json lacks config.model or dataset.name" in err
    assert "| mA | d1 | 10 | 50.0 | 50.0 [23.7, 76.3] |" in out


def test_truncated_calls_file_is_read_up_to_the_cut(tmp_path, capsys):
    runs = build_study(tmp_path / "runs")
    calls = runs[0] / "calls.jsonl"
    calls.write_bytes(calls.read_bytes() + b'{"stage": "test", "strategy": "EP_CRIT", "completion_tok')
    code, out, err = run(capsys, "tables", tmp_path / "runs", "--format", "json")
    assert code == 0
    assert f"{calls}:" in err and "unreadable line skipped" in err
    data = json.loads(out)
    tokens = {(r["model"], r["dataset"], r["strategy"]): r["tokens_per_question"] for r in data["table3"]}
    assert tokens[("mA", "d1", "EP_CRIT")] == pytest.approx(300)


def test_mixed_template_hashes_are_refused_unless_allowed(tmp_path, capsys):
    prediction = [synthetic.prediction("test", "zero_shot", "t0", True)]
    synthetic.write_run(tmp_path / "a", synthetic.manifest("m", "d", templates={"pa": "1" * 64}), [], prediction)
    synthetic.write_run(tmp_path / "b", synthetic.manifest("m", "d2", templates={"pa": "1" * 64}), [], prediction)
    other = synthetic.manifest("m", "d", templates={"pa": "2" * 64}, ablation={"name": "k", "value": 1})
    synthetic.write_run(tmp_path / "c", other, [], prediction)
    code, out, err = run(capsys, "tables", tmp_path, "--format", "json")
    assert code == 1
    assert "m / d: runs of the same settings use different prompt templates (pa: 111111111111 in" in err
    assert "--allow-mixed" in err
    assert [r["dataset"] for r in json.loads(out)["table1"]] == ["d2"]  # the other pair is still analysed
    code, out, err = run(capsys, "tables", tmp_path, "--format", "json", "--allow-mixed")
    assert code == 0 and "pooled anyway" in err
    assert sorted(r["dataset"] for r in json.loads(out)["table1"]) == ["d", "d2"]


def test_report_is_one_offline_html_file(study_dir, tmp_path, capsys):
    code, _, err = run(capsys, "report", study_dir, "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert page.count("data:image/png;base64,") == 4
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert "Table 10. Per-user accuracy" in page and "Skipped:" in page


def test_report_says_why_a_plot_is_missing(tmp_path, capsys):
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "d"), [],
                        [synthetic.prediction("test", "zero_shot", "t0", True)])
    code, _, _ = run(capsys, "report", tmp_path / "run", "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert code == 0 and page.count("data:image/png;base64,") == 1 and page.count("Plot skipped:") == 3


def _report_order(page: str) -> None:
    """What can be filled comes before what cannot: every drawn plot before any skipped one, every filled table
    before any skipped one, every computed claim before any skipped one."""
    last_image = page.rfind("data:image/png;base64,")
    assert all(page.find(mark) > last_image for mark in ("Plot skipped:",) if mark in page)
    last_table = page.rfind("<table>")
    first_skip = page.find('<p class="skip">Skipped:')
    assert first_skip == -1 or first_skip > last_table
    claims = page[page.find("<h2>Headline claims</h2>"):page.find("</ul>")]
    if 'class="skip"' in claims:
        assert "<li><b>" not in claims[claims.find('class="skip"'):]


def test_a_report_shows_what_it_can_fill_first_and_each_thing_it_cannot_in_one_line(tmp_path, capsys):
    synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "d"), [],
                        [synthetic.prediction("test", "zero_shot", "t0", True)])
    code, _, _ = run(capsys, "report", tmp_path / "run", "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert code == 0
    _report_order(page)
    assert page.count('<p class="skip">Skipped: <b>') >= 1  # a table that cannot be filled: one line, no heading


def test_the_accuracy_plot_holds_every_bar_and_its_legend_stays_off_the_bars():
    from critique.analysis.study import report
    from critique.analysis.study.tables import Result
    from critique.analysis.study.tabular import Table

    rows = [{"model": "m", "dataset": d, "strategy": s, "accuracy": a, "n": 10, "errors": 0}
            for d, values in (("d1", (25.2, 25.2)), ("d2", (50.4, 52.4))) for s, a in zip(("zero_shot", "EP_CRIT"),
                                                                                            values)]
    result = Result("test", [Table("table1", "Table 1", list(rows[0]), rows)], {}, {})
    figure, why = report.plot_accuracy(result)
    assert why is None
    axis = figure.axes[0]
    assert axis.get_ylim()[1] >= 52.4
    figure.canvas.draw()
    legend = axis.get_legend().get_window_extent()
    assert legend.y0 >= axis.get_window_extent().y1  # above the axes, never over a bar


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (apt-get install chromium)")
def test_a_browser_renders_the_report_in_its_order(study_dir, tmp_path, capsys):
    code, _, err = run(capsys, "report", study_dir, "-o", tmp_path / "r.html")
    assert code == 0, err
    done = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--dump-dom",
                           (tmp_path / "r.html").as_uri()], capture_output=True, text=True, timeout=300)
    dom = done.stdout
    assert done.returncode == 0 and "<h1>Study report</h1>" in dom  # the page as the browser parsed it
    assert dom.count("data:image/png;base64,") == 4
    _report_order(dom)


HEAVY = ("litellm", "torch", "sentence_transformers", "pandas", "statsmodels", "numpy", "scipy")  # scipy: in the helper


@pytest.mark.parametrize("entry", ["analysis", "critique.cli"])
def test_tables_imports_nothing_heavy(study_dir, entry):
    code = (f"import sys; from {entry} import main; "
            f"rc = main(['tables', {str(study_dir)!r}, '--format', 'json']); "
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules]); sys.exit(rc)")
    if entry == "analysis":
        code = code.replace("from analysis import main", "from analysis.__main__ import main")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


def test_inference_keeps_this_process_light_and_has_the_documented_keys(study_dir):
    code = (f"import sys; from critique.cli import main; "
            f"rc = main(['tables', {str(study_dir)!r}, '--inference', '--format', 'json']); "
            "print('LOADED', [m for m in ('litellm', 'torch', 'sentence_transformers', 'pandas', 'statsmodels') "
            "if m in sys.modules]); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout  # pandas and statsmodels work in the helper process (analysis.stats.core)
    data = json.loads(done.stdout[:done.stdout.rindex("LOADED")])
    assert {"paired", "pooled", "table2_holm", "repeat_spread"} <= set(data["inference"])
    assert set(data["inference"]["paired"][0]) >= {
        "model", "dataset", "strategy", "baseline", "n", "acc_strategy", "acc_baseline", "diff", "ci_low", "ci_high",
        "discordant_wins", "discordant_losses", "p_mcnemar", "p_holm"}
    assert set(data["inference"]["pooled"][0]) == {"condition", "strategy", "baseline", "odds_ratio", "ci_low",
                                                   "ci_high", "p", "method"}
    assert "within_dataset" in data["claims"]["C4"]
