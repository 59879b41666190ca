"""Figures that claim no more than their numbers carry: a predicted attractor whose slope cannot be told from 0
says it is no test; the loop's l counts a note with no verdict in its one denominator; the Echo table's kappa is
taken within difficulty strata, per stratum, with the pooled slope marked confounded; a correlation of a
constant is undefined and printed so; P(r=1 | U=0) of a critic shown the gold label is its contradiction of
that label, not the label-free leniency; a retrieval failure says its right note states the gold label."""

from __future__ import annotations

import json
import random

import pytest

from critique.analysis.memory import audit, echo, echo_stats, online
from critique.analysis.__main__ import main as analysis_main
from test_audit import probe_run, single_run
from test_echo import TRUTH, critic_run, verify_run
from test_online import synthetic_stream


def tables_json(paths, capsys) -> dict:
    assert analysis_main(["tables", *map(str, paths), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---- the predicted attractor and the loop's one denominator ------------------------------------------------
def difficulty_stream(steps: int = 400, seed: int = 3) -> tuple[dict, dict]:
    """(stream, memory-off arm): every other question is hard and always answered wrong, the others always
    right, whatever notes are shown (no contamination); a wrong answer is written back trusted (verdict 1), as
    wrong (0) or with no verdict (None: a critique that names no option), a right one trusted."""
    rng = random.Random(seed)
    versions, records, off = [], [], []
    for step in range(steps):
        hard = step % 2 == 0
        trusted = [v for v in versions if v["verdict"] == 1]
        seen = rng.sample(trusted, min(5, len(trusted)))
        records.append({"step": step, "correct": not hard, "user": None, "item_id": f"i{step}",
                        "memory_notes": len(versions), "retrieved_versions": [f"{v['note']}@1" for v in seen]})
        verdict = rng.choice([1, 1, 0, None]) if hard else 1
        versions.append({"note": f"stream:i{step}", "version": 1, "status": "active", "step": step,
                         "verdict": verdict, "truth": int(not hard)})
        off.append({"step": step, "correct": not hard, "user": None, "item_id": f"i{step}"})
    label = {"model": "m", "dataset": "d", "feedback": "gold", "start": "empty", "conflicts": "append",
             "rank": "similarity", "order": 0}
    return ({"label": label, "steps": records, "versions": versions},
            {"label": {**label, "feedback": "none"}, "steps": off, "versions": []})


def test_a_stream_whose_slope_is_0_says_the_prediction_is_no_test():
    stream, off = difficulty_stream()
    row = online.summary(stream, off)
    assert row["kappa_within"] == 0.0 and (row["slope_low"], row["slope_high"]) == (0.0, 0.0)
    assert row["attractor"] is not None and row["attractor_why"].startswith("no test: the slope's interval")
    # with kappa = 0 the prediction is the written notes' own share: predicted and reached agree by construction
    assert row["attractor"] == pytest.approx(row["corrupted"], abs=0.01)


def test_a_stream_with_real_contamination_makes_a_test_of_its_prediction():
    row = online.summary(synthetic_stream(0.3, 0.4, 0.6, 0.9), None)
    assert row["slope_low"] > 0 and row["attractor_why"] is None


def test_a_critic_that_stores_every_answer_as_wrong_has_no_prediction_and_says_why():
    """A self critic that calls every answer wrong trusts nothing it writes: l = s = 0, no slope, no attractor."""
    row = online.summary(synthetic_stream(0.3, 0.0, 0.0, 0.0, steps=200), None)
    assert (row["l"], row["s"], row["kappa"], row["attractor"]) == (0.0, 0.0, None, None)
    assert row["attractor_why"] == ("no prediction: no note the stream wrote is trusted, so none can be trusted "
                                    "but wrong")


def test_a_bank_with_no_trusted_wrong_note_has_no_slope_and_says_so():
    """A gold critic that never contradicts the label: every trusted note shown is right, p is 0 at every step."""
    row = online.summary(synthetic_stream(0.3, 0.0, 0.0, 1.0, steps=200), None)
    assert (row["l"], row["s"], row["kappa"], row["attractor"]) == (0.0, 1.0, None, None)
    assert row["attractor_why"].startswith("no prediction: no slope, every step was shown the same share")


@pytest.mark.parametrize("leniency, s, slope, why", [
    (None, None, {"kappa": None, "groups": []}, "the stream wrote no note back"),
    (None, 1.0, {"kappa": None, "groups": []}, "the stream wrote back no wrong answer"),
    (0.5, None, {"kappa": None, "groups": []}, "the stream wrote back no right answer"),
    (0.5, 1.0, {"kappa": None, "groups": []}, "no slope, no step was shown a trusted note"),
    (0.5, 1.0, {"kappa": None, "groups": [(None, (1, 0.0, 0.0, 0.0, 0.0))]}, "no slope, every step was shown"),
    (0.3, 0.0, {"kappa": 0.5, "groups": []}, "would store nothing as right"),  # attractor(0.0, 0.5, 0.3, 0.0)
])
def test_each_way_a_loop_has_no_prediction_is_named(leniency, s, slope, why):
    from critique.analysis.memory import online_loop

    if slope["kappa"] is not None:
        assert online_loop.attractor(0.0, slope["kappa"], leniency, s) is None  # a slope, and still no attractor
    said = online_loop.no_prediction(leniency, s, slope)
    assert said.startswith("no prediction: ") and why in said


def test_the_loops_l_counts_a_note_with_no_verdict_in_its_one_denominator():
    stream, off = difficulty_stream()
    wrong = [v for v in stream["versions"] if v["truth"] == 0]
    assert any(v["verdict"] is None for v in wrong)  # notes whose critique named no verdict
    row = online.summary(stream, off)
    assert row["l"] == sum(v["verdict"] == 1 for v in wrong) / len(wrong)  # not over the known verdicts alone
    assert "leniency" not in row and row["s"] == 1.0


# ---- the Echo table's kappa: within strata, per stratum, the pooled one marked confounded --------------
def test_kappa_within_strata_per_stratum_and_the_pooled_slope_marked_confounded(tmp_path, capsys):
    data = tables_json([single_run(tmp_path)], capsys)
    (row,) = data["echo"]
    # zero_shot right on t0 and t2, wrong on t1 and t3; in each stratum the error does not move with the share
    assert (row["kappa_zero_shot_right"], row["kappa_zero_shot_wrong"], row["kappa_within"]) == (0.0, 0.0, 0.0)
    assert row["kappa_confounded"] == pytest.approx(3 / 17) and "kappa" not in row
    assert "kappa_confounded: pooled over both strata, confounded with the questions' difficulty" in echo.ECHO_NOTE


def test_the_shipped_control_pos_slope_is_difficulty_not_contamination(shipped_tables):
    row = next(r for r in shipped_tables["echo"] if r["model"] == "local/smollm2" and r["dataset"] == "control-pos")
    assert row["kappa_confounded"] > 0.5
    assert row["kappa_within"] == row["kappa_zero_shot_right"] == row["kappa_zero_shot_wrong"] == 0.0


# ---- a correlation of a constant -----------------------------------------------------------------------
def test_a_verifier_that_flags_every_entry_has_no_correlation(tmp_path, capsys):
    source = single_run(tmp_path / "runs")
    check = verify_run(tmp_path / "runs" / "all", source, {k: False for k in TRUTH})
    (row,) = tables_json([source, check], capsys)["eia"]
    assert (row["corr_v_u"], row["corr_nu_b"]) == (None, None)
    assert row["corr_why"] == "undefined: V = 0 for every entry"
    assert "undefined: V = 0 for every entry" in echo.verifier_text(check)


def test_the_shipped_reorder_verifier_prints_no_correlation(shipped_tables):
    for row in shipped_tables["eia"]:
        assert row["corr_nu_b"] is None and row["corr_why"] == "undefined: V = 0 for every entry; r = 1 for every entry"


# ---- leniency and contradiction, named apart ---------------------------------------------------------------
def test_a_critic_shown_the_gold_label_contradicts_it_and_one_shown_none_is_lenient(tmp_path, capsys):
    gold = critic_run(tmp_path, "gold", {"a": ("1", "2", None), "b": ("4", "3", None)}, {("EP_CRIT", "t0"): True})
    selfrun = critic_run(tmp_path, "self", {"a": ("1", "2", "right"), "b": ("4", "3", "wrong")},
                         {("EP_CRIT", "t0"): True})
    rows = {r["critic"]: r for r in tables_json([gold, selfrun], capsys)["echo"]}
    assert (rows["gold"]["leniency"], rows["gold"]["contradiction"]) == (None, 0.0)
    assert (rows["self"]["leniency"], rows["self"]["contradiction"]) == (50.0, None)


def test_an_entry_shown_a_flipped_label_is_in_neither():
    rows = [{"label": None, "label_flipped": False, "gold": "2", "r": 1},
            {"label": "2", "label_flipped": False, "gold": "2", "r": 0},
            {"label": "1", "label_flipped": True, "gold": "2", "r": 1}]
    found = echo_stats.stored_right(rows)
    assert (found["leniency"]["value"], found["leniency"]["entries"]) == (1.0, 1)
    assert (found["contradiction"]["value"], found["contradiction"]["entries"]) == (0.0, 1)


def test_the_audit_names_the_gold_critics_rate_a_contradiction(tmp_path, capsys):
    run = single_run(tmp_path)
    assert analysis_main(["audit", str(run)]) == 0
    out = capsys.readouterr().out
    assert "| contradiction: P(r = 1) over U = 0 entries whose critic was shown the gold label | 0.500 [0.150, " \
           "0.850] over 4 entries |" in out
    assert "| leniency: P(r = 1) over U = 0 entries whose critic was shown no label | - |" in out


# ---- retrieval failure ---------------------------------------------------------------------------------------
def test_a_retrieval_failure_says_its_right_note_states_the_gold_label(tmp_path, capsys):
    single_run(tmp_path)
    probe_run(tmp_path)
    (found,) = audit.audit([str(tmp_path)])["audits"]
    assert "whose right note is the item's truthful critique and states its gold label" in found["failures"]["note"]
    assert analysis_main(["audit", str(tmp_path)]) == 0
    assert "retrieval failures 1 (made right by a note that states the gold label)" in capsys.readouterr().out
