"""The Echo-Gap tables (critique.analysis.echo) on hand-made run directories whose numbers are worked out by
hand, and on a run whose scripted self critic always calls the answer right."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from critique.analysis import echo, synthetic
from critique.analysis.__main__ import main as analysis_main
from critique.base import rundir
from critique.experiments import verify  # noqa: F401  (declares a verifier's fields)

from test_audit import entry, manifest, memory, pref_run, single_run


def tables_json(paths, capsys) -> dict:
    assert analysis_main(["tables", *map(str, paths), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def one_row(data: dict, key: str = "echo") -> dict:
    (row,) = data[key]
    return row


def test_leniency_specificity_reuse_and_contamination_by_hand(tmp_path, capsys):
    row = one_row(tables_json([single_run(tmp_path)], capsys))
    # test_audit.ENTRIES: U=0 with a known verdict: e0 (r=1), e1 (0), e4 (1), e5 (0); e3 names no option;
    # U=1: e2 (r=1), e6 (0), e7-e9 (1)
    assert (row["entries"], row["verdict_unknown"], row["u0"]) == (10, 1, 4)
    assert row["leniency"] == pytest.approx(50.0) and row["specificity"] == pytest.approx(20.0)
    # n counts retrievals into EP_CRIT and EP+SEM_CRIT prompts only (the strategies kappa reads; EP_LABEL shows
    # labels, not verdicts, so its retrievals cannot echo one): e0 3 + 1, e1 1, e4 1 + 1, e5 1 (with EP_LABEL's it
    # was (7, 2, 3, 2), Corr 3 / sqrt(17))
    assert row["corr_b_n_u0"] == pytest.approx(2 / math.sqrt(6))  # b = (1, 0, 1, 0), n = (4, 1, 2, 1)
    # EP_CRIT and EP+SEM_CRIT prompts: (share of retrieved entries with b != 0, error):
    points = [(0.5, 1), (1, 1), (0.5, 0), (0, 1),  # EP_CRIT t0-t3 (t3's failed record replaced)
              (1, 0), (1, 1), (1, 0)]  # EP+SEM_CRIT t0-t2 (e6: b = -1 is wrong too); t3 retrieved nothing
    assert row["kappa_prompts"] == len(points)
    assert row["kappa"] == pytest.approx(-5 / 13)  # Sxy / Sxx = (-5/14) / (13/14)
    assert row["critic"] == "gold" and row["label_flipped"] == 0 and row["believed_not_gold"] is None
    assert "leniency_generator" not in row  # no generator truth: no such column
    assert row["corr_low"] is not None and row["corr_low"] <= row["corr_high"]


def test_the_bootstrap_interval_is_seeded_and_exact_when_the_answer_is_known():
    b = [0, 1, 0, 1, 1, 0, 0, 1]
    assert echo.bootstrap_corr(b, [5 * x + 1 for x in b]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert echo.bootstrap_corr(b, [1 - x for x in b]) == (pytest.approx(-1.0), pytest.approx(-1.0))
    noisy = ([0, 1, 0, 1, 1, 0, 0, 1, 1, 0], [3, 9, 2, 4, 8, 1, 7, 6, 2, 5])
    first = echo.bootstrap_corr(*noisy)
    assert first == echo.bootstrap_corr(*noisy) and first[0] < first[1]
    assert echo.bootstrap_corr(*noisy, seed=1) != first
    assert echo.bootstrap_corr([0, 1], [1, 2]) == (None, None)  # too few pairs


def test_the_generators_truth_gives_its_own_rates(tmp_path, capsys):
    row = one_row(tables_json([pref_run(tmp_path / "runs", tmp_path / "data")], capsys))
    # gold: u1/x0 (A vs gold B, says B: U=0, r=0), u1/x1 (U=1, r=1), u2/y0 (U=0, r=0)
    assert (row["leniency"], row["specificity"]) == (0.0, 0.0)
    # the rule prefers A, B, B: x1 (U=0 by the rule, r=1) is lenient; x0 and y0 (U=1, r=0) harsh
    assert (row["leniency_generator"], row["specificity_generator"]) == (100.0, 100.0)


def critic_run(root: Path, critic: str, verdicts: dict, correct: dict) -> Path:
    """A run of `critic` whose entries have the given self verdicts (None: shown the gold) and whose test
    predictions are right per (strategy, item) as in `correct`."""
    head = manifest("m", "d", run_id=critic)
    head["config"]["critic"] = critic
    head["dataset"]["answer_space"] = ["1", "2", "3", "4"]
    head["dataset"]["path"] = str(root / "no-such-dataset")
    predictions = [synthetic.prediction("test", s, i, ok, retrieved=["a", "b"] if s == "EP_CRIT" else [])
                   for (s, i), ok in correct.items()]
    path = synthetic.write_run(root / f"d__m__{critic}", head, [], synthetic.in_run(head, predictions))
    entries = []
    for key, (initial, gold, verdict) in verdicts.items():
        e = entry(key, initial, gold, f"The correct answer is {gold}.", False)
        if verdict is not None:
            believed = initial if verdict == "right" else gold
            e.update(label=None, label_flipped=False, verdict=verdict, believed=believed, assertion_mismatch=None,
                     critique={**e["critique"], "correct_answer": f"The correct answer is {believed}."})
        entries.append(e)
    memory(path, entries)
    return path


def test_accuracy_next_to_the_gold_critic_run_and_zero_shot(tmp_path, capsys):
    items = ["t0", "t1", "t2", "t3"]
    gold = critic_run(tmp_path, "gold", {"a": ("1", "2", None), "b": ("3", "3", None)},
                      {**{("zero_shot", i): i == "t0" for i in items}, **{("EP_CRIT", i): i != "t3" for i in items}})
    selfrun = critic_run(tmp_path, "self", {"a": ("1", "2", "right"), "b": ("3", "3", "right")},
                         {**{("zero_shot", i): i == "t0" for i in items}, **{("EP_CRIT", i): i == "t1" for i in items}})
    data = tables_json([gold, selfrun], capsys)
    rows = {(r["critic"], r["strategy"]): r for r in data["echo_accuracy"]}
    mine = rows[("self", "EP_CRIT")]
    assert (mine["accuracy"], mine["gold_critic"], mine["zero_shot"]) == (25.0, 75.0, 25.0)
    assert (mine["vs_gold_critic"], mine["vs_zero_shot"]) == (-50.0, 0.0)
    assert rows[("gold", "EP_CRIT")]["vs_gold_critic"] == 0.0 and rows[("gold", "EP_CRIT")]["accuracy"] == 75.0
    echo_rows = {r["critic"]: r for r in data["echo"]}
    assert echo_rows["self"]["leniency"] == 100.0 and echo_rows["gold"]["leniency"] == 0.0
    assert echo_rows["self"]["believed_not_gold"] == 1  # a: it believes its wrong answer
    # EP_CRIT retrieved a and b in every prompt: share wrong 1/2 always, so no slope
    assert echo_rows["self"]["kappa"] is None and echo_rows["self"]["kappa_prompts"] == 4


def test_a_critic_that_always_calls_the_answer_right_has_leniency_one(home, fake_llm, monkeypatch, capsys):
    from critique.cli import main

    monkeypatch.setenv("FAKE_LLM_SELF", "lenient")
    out = home / "lenient"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "8", "--k", "3", "--out",
                 str(out), "--quiet", "--critic", "self"]) == 0
    entries = rundir.read_jsonl(out / rundir.MEMORY / "episodic.jsonl")
    assert all(e["verdict"] == "right" and e["believed"] == e["initial_answer"] for e in entries)
    wrong = sum(e["initial_answer"] != e["gold"] for e in entries)
    assert wrong > 0  # there are wrong answers to be lenient about
    capsys.readouterr()
    row = one_row(tables_json([out], capsys))
    assert (row["u0"], row["leniency"], row["specificity"]) == (wrong, 100.0, 0.0)
    assert row["believed_not_gold"] == wrong and row["critic"] == "self"
    # the gold critic of the same data is not lenient: the number can fail
    gold = home / "gold"
    monkeypatch.delenv("FAKE_LLM_SELF")
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "8", "--k", "3", "--out",
                 str(gold), "--quiet"]) == 0
    capsys.readouterr()
    assert one_row(tables_json([gold], capsys))["leniency"] == 0.0


def test_markdown_and_html_show_the_echo_tables(tmp_path, capsys):
    run = single_run(tmp_path)
    assert analysis_main(["tables", str(run)]) == 0
    out = capsys.readouterr().out
    assert echo.ECHO_TITLE in out and echo.ACCURACY_TITLE in out and "| 50.0 | 20.0 | 0.82 |" in out
    page = tmp_path / "report.html"
    assert analysis_main(["report", str(run), "-o", str(page)]) == 0
    assert echo.ECHO_TITLE in page.read_text(encoding="utf-8")


# ---- verifiers: the EIA numbers ------------------------------------------------------------------------
def verify_run(root: Path, source: Path, survives: dict) -> Path:
    """A verify run of `source` whose check of each entry survived as in `survives`."""
    head = manifest("m", "d", probe={"name": "verify", "verifier": "reorder", "source": str(source),
                                     "source_run_id": "plain"}, run_id=f"verify-{len(survives)}")
    head["dataset"]["answer_space"] = ["1", "2", "3", "4"]
    records = [synthetic.prediction("probe", "reorder", key, True, experiment="verify", verifier="reorder",
                                    checked_answer="1", shown_answer="1", survives=ok) for key, ok in survives.items()]
    return synthetic.write_run(root, head, [], synthetic.in_run(head, records))


def eia_row(paths, capsys) -> dict:
    return one_row(tables_json(paths, capsys), "eia")


# test_audit.ENTRIES: (U, r) of each entry with a known verdict
TRUTH = {"e0": (0, 1), "e1": (0, 0), "e2": (1, 1), "e4": (0, 1), "e5": (0, 0), "e6": (1, 0), "e7": (1, 1),
         "e8": (1, 1), "e9": (1, 1)}


def test_a_verifier_equal_to_the_truth_has_precision_one(tmp_path, capsys):
    source = single_run(tmp_path / "runs")
    check = verify_run(tmp_path / "runs" / "truth", source, {k: bool(u) for k, (u, _) in TRUTH.items()})
    row = eia_row([source, check], capsys)
    assert (row["checked"], row["flagged"], row["precision"]) == (9, 4, 100.0)
    assert row["corr_v_u"] == pytest.approx(1.0)
    # nu = 0 everywhere: no correlation with b is defined
    assert row["corr_nu_b"] is None and row["verifier"] == "reorder"


def test_a_verifier_that_copies_the_stored_verdict_echoes_it(tmp_path, capsys):
    source = single_run(tmp_path / "runs")
    check = verify_run(tmp_path / "runs" / "copy", source, {k: bool(r) for k, (_, r) in TRUTH.items()})
    row = eia_row([source, check], capsys)
    assert row["corr_nu_b"] == pytest.approx(1.0)  # nu = r - U = b
    # flagged: e1, e5 (U=0) and e6 (U=1): precision 2/3
    assert (row["flagged"], row["precision"]) == (3, pytest.approx(200 / 3))
