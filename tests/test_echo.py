"""The Echo-Gap tables (critique.analysis.memory.echo) on hand-made run directories whose numbers are worked out by
hand, and on a run whose scripted self critic always calls the answer right."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from critique.analysis import synthetic
from critique.analysis.memory import echo, echo_stats
from critique.analysis.stats.core import wilson
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
    # the gold critic was shown the gold label: P(r=1 | U=0) is its contradiction of it, not leniency
    assert row["contradiction"] == pytest.approx(50.0) and row["specificity"] == pytest.approx(20.0)
    assert row["leniency"] is None
    # n counts retrievals into EP_CRIT and EP+SEM_CRIT prompts only (the strategies kappa reads; EP_LABEL shows
    # labels, not verdicts, so its retrievals cannot echo one): e0 3 + 1, e1 1, e4 1 + 1, e5 1 (with EP_LABEL's it
    # was (7, 2, 3, 2), Corr 3 / sqrt(17))
    assert row["corr_b_n_u0"] == pytest.approx(2 / math.sqrt(6))  # b = (1, 0, 1, 0), n = (4, 1, 2, 1)
    # EP_CRIT and EP+SEM_CRIT prompts: (share of retrieved entries that are wrong-but-trusted, b = +1, error):
    points = [(0.5, 1), (1, 1), (0.5, 0), (0, 1),  # EP_CRIT t0-t3 (t3's failed record replaced)
              (1, 0), (1, 1), (0, 0)]  # EP+SEM_CRIT t0-t2 (e6: b = -1, a right answer stored as wrong, is not
    # wrong-but-trusted); t3 retrieved nothing
    assert row["kappa_prompts"] == len(points)
    assert row["kappa_confounded"] == pytest.approx(3 / 17)  # pooled: Sxy / Sxx = (3/14) / (17/14)
    # zero_shot right on t0, t2: (0.5, 1), (1, 0), (0.5, 0), (0, 0): Sxy = 0; wrong on t1, t3: the error is 1 in
    # every prompt: the pooled slope is all difficulty
    assert (row["kappa_zero_shot_right"], row["kappa_zero_shot_wrong"], row["kappa_within"]) == (0.0, 0.0, 0.0)
    assert row["kappa_varying"] == 3  # shares other than their stratum's most common one (0.5; 1)
    assert row["critic"] == "gold" and row["label_flipped"] == 0 and row["believed_not_gold"] is None
    assert "stored_right_generator" not in row  # no generator truth: no such column
    # two wrong-but-trusted reused entries (e0, e4) carry both: too few for an interval, and each says so
    assert row["lenient_reused"] == 2 and (row["corr_low"], row["corr_high"], row["kappa_within_low"]) == (None,) * 3
    assert "wrong-but-trusted reused entries 2, U=0 entries with b=0 2" in row["corr_why"]
    assert row["kappa_why"] == ("no interval: wrong-but-trusted entries retrieved 2, prompts whose share varies "
                                "within their stratum 3 (an interval needs 5 and 10)")
    assert row["contradiction_low"] == pytest.approx(15.003899, abs=1e-5)  # Wilson, 2 of 4


def test_the_bootstrap_interval_is_seeded_and_exact_when_the_answer_is_known():
    b = [0, 1, 0, 1, 1, 0, 0, 1]
    low, high, undefined = echo_stats.bootstrap_corr(b, [5 * x + 1 for x in b])
    assert (low, high) == (pytest.approx(1.0), pytest.approx(1.0)) and 0 < undefined < 0.05  # all-0 or all-1 draws
    assert echo_stats.bootstrap_corr(b, [1 - x for x in b])[:2] == (pytest.approx(-1.0), pytest.approx(-1.0))
    noisy = ([0, 1, 0, 1, 1, 0, 0, 1, 1, 0], [3, 9, 2, 4, 8, 1, 7, 6, 2, 5])
    first = echo_stats.bootstrap_corr(*noisy)
    assert first == echo_stats.bootstrap_corr(*noisy) and first[0] < first[1]
    assert echo_stats.bootstrap_corr(*noisy, seed=1) != first
    assert echo_stats.bootstrap_corr([0, 1], [1, 2]) == (None, None, None)  # too few pairs


def u0_rows(lenient: list[int], others: list[int]) -> list[dict]:
    """U = 0 entry rows: b = +1 with the reuse n in `lenient`, b = 0 with the reuse n in `others`."""
    return [{"b": 1, "n": n} for n in lenient] + [{"b": 0, "n": n} for n in others]


def test_corr_b_n_on_one_reused_lenient_entry_gives_no_interval():
    # mcr-gen's gold critic: one lenient entry, reused 12 times, among 182 U=0 entries; the bootstrap used to
    # drop the ~37% of resamples that missed it and print an interval conditional on drawing it
    rows = u0_rows([12], [i % 4 for i in range(181)])
    low, high, undefined = echo_stats.bootstrap_corr([r["b"] for r in rows], [r["n"] for r in rows])
    assert low is not None and 0.3 < undefined < 0.45  # what the interval rested on
    corr = echo_stats.corr_b_n(rows)
    assert corr["value"] == pytest.approx(echo_stats.pearson([r["b"] for r in rows], [r["n"] for r in rows]))
    assert (corr["lenient_reused"], corr["entries"], corr["low"], corr["high"]) == (1, 182, None, None)
    assert corr["why"] == ("no interval: wrong-but-trusted reused entries 1, U=0 entries with b=0 181 (an interval "
                           "needs 5 of each)")
    # three entries: a perfect correlation, with the caveat beside it
    three = echo_stats.corr_b_n(u0_rows([3], [1, 1]))
    assert three["value"] == pytest.approx(1.0) and three["low"] is None and "b=0 2 " in three["why"]
    # enough on both sides: an interval, and the share of undefined resamples it left out
    many = echo_stats.corr_b_n(u0_rows([3, 5, 2, 6, 4, 0, 7], [1, 0, 2, 1, 3, 0, 1, 2]))
    assert many["why"] is None and many["low"] < many["value"] < many["high"] and many["undefined"] < 0.05
    assert echo_stats.corr_b_n(u0_rows([2, 3], []))["why"] == "undefined: every U=0 entry has b = +1"


def test_kappa_reads_wrong_but_trusted_entries_and_says_what_varies():
    rows = [{"id": f"w{i}", "b": 1} for i in range(6)] + [{"id": f"r{i}", "b": 0} for i in range(6)] + [
        {"id": "harsh", "b": -1}, {"id": "unknown", "b": None}]

    def prompt(item, retrieved, correct, strategy="EP_CRIT"):
        return {"strategy": strategy, "item_id": item, "retrieved": retrieved, "correct": correct}

    # a right answer stored as wrong (b = -1) is not contamination: the old slope counted it and found -1
    harsh = [prompt("t0", ["harsh"], True), prompt("t1", ["r0"], False), prompt("t2", ["unknown"], False)]
    one = {(None, f"{q}{i}"): True for q in "tq" for i in range(24)}  # one stratum: within is the pooled slope
    out = echo_stats.contamination(rows, harsh, ("EP_CRIT",), one)
    assert out["within"] is None and out["prompts"] == 2 and "same wrong-but-trusted share" in out["why"]
    # error 1 exactly where the share of wrong-but-trusted entries is 1/2: slope 2 over 24 prompts, 12 varying
    made = [prompt(f"q{i}", [f"w{i // 2 % 6}", f"r{i % 6}"] if i % 2 else [f"r{i % 6}"], not i % 2) for i in range(24)]
    out = echo_stats.contamination(rows, made + [prompt("q0", ["w0"], False, "EP_LABEL")], ("EP_CRIT",), one)
    assert (out["within"], out["prompts"], out["varying"], out["trusted_wrong"]) == (pytest.approx(2.0), 24, 12, 6)
    assert out["confounded"] == pytest.approx(2.0) and out["right"] == pytest.approx(2.0)
    assert out["why"] is None and out["low"] == pytest.approx(2.0) and out["high"] == pytest.approx(2.0)


def test_leniency_has_the_wilson_interval():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((1, 182), (62, 84), (0, 10), (10, 10), (3, 7), (0, 1)):
        assert wilson(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)
    assert wilson(0, 0) == (None, None)


def test_the_generators_truth_gives_its_own_rates(tmp_path, capsys):
    row = one_row(tables_json([pref_run(tmp_path / "runs", tmp_path / "data")], capsys))
    # gold: u1/x0 (A vs gold B, says B: U=0, r=0), u1/x1 (U=1, r=1), u2/y0 (U=0, r=0)
    assert (row["contradiction"], row["specificity"]) == (0.0, 0.0)
    # the rule prefers A, B, B: x1 (U=0 by the rule, r=1) is lenient; x0 and y0 (U=1, r=0) harsh
    assert (row["stored_right_generator"], row["specificity_generator"]) == (100.0, 100.0)


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
    assert echo_rows["self"]["leniency"] == 100.0 and echo_rows["gold"]["contradiction"] == 0.0
    assert echo_rows["self"]["contradiction"] is None and echo_rows["gold"]["leniency"] is None
    assert echo_rows["self"]["believed_not_gold"] == 1  # a: it believes its wrong answer
    # EP_CRIT retrieved a and b in every prompt: share wrong 1/2 always, so no slope
    assert echo_rows["self"]["kappa_within"] is None and echo_rows["self"]["kappa_confounded"] is None
    assert echo_rows["self"]["kappa_prompts"] == 4


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
    assert one_row(tables_json([gold], capsys))["contradiction"] == 0.0


def test_markdown_and_html_show_the_echo_tables(tmp_path, capsys):
    run = single_run(tmp_path)
    assert analysis_main(["tables", str(run)]) == 0
    out = capsys.readouterr().out
    assert echo.ECHO_TITLE in out and echo.ACCURACY_TITLE in out
    assert "| - | - | - | 50.0 | 15.0 | 85.0 | 20.0 | 0.82 | 2 |" in out  # no leniency: a gold critic contradicts
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
    # nu = 0 everywhere: no correlation with b is defined, and the table says so
    assert row["corr_nu_b"] is None and row["verifier"] == "reorder"
    assert row["corr_why"] == "undefined: nu = 0 for every entry"


def test_a_verifier_that_copies_the_stored_verdict_echoes_it(tmp_path, capsys):
    source = single_run(tmp_path / "runs")
    check = verify_run(tmp_path / "runs" / "copy", source, {k: bool(r) for k, (_, r) in TRUTH.items()})
    row = eia_row([source, check], capsys)
    assert row["corr_nu_b"] == pytest.approx(1.0) and row["corr_why"] is None  # nu = r - U = b
    # flagged: e1, e5 (U=0) and e6 (U=1): precision 2/3
    assert (row["flagged"], row["precision"]) == (3, pytest.approx(200 / 3))


def test_one_reuse_for_the_audit_and_the_echo_table_named_in_each(tmp_path, capsys):
    from critique.analysis.memory import audit

    run = single_run(tmp_path)
    row = one_row(tables_json([run], capsys))
    result = audit.audit([str(run)])["audits"][0]
    # the same n (EP_CRIT and EP+SEM_CRIT prompts, not EP_LABEL's), so the same Corr(b, n | U = 0)
    assert result["summary"]["corr_b_n_u0"] == pytest.approx(row["corr_b_n_u0"]) == pytest.approx(2 / math.sqrt(6))
    assert audit.REUSE == echo_stats.REUSE == ("EP_CRIT", "EP+SEM_CRIT")
    assert result["summary"]["reuse_definition"] == echo_stats.REUSE_NOTE
    assert analysis_main(["tables", str(run)]) == 0
    tables = capsys.readouterr().out
    assert analysis_main(["audit", str(run)]) == 0
    audited = capsys.readouterr().out
    for out in (tables, audited):  # named wherever n is used
        assert " ".join(echo_stats.REUSE_NOTE.split()) in " ".join(out.split())
    assert "any EP strategy" not in tables and "(all strategies)" not in audited
