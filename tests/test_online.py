"""The predicted attractor of the write-back loop (docs/memory.md section 1): its closed forms, a synthetic
write-back loop with known parameters that settles where it says, and the online table's estimate of it from a
synthetic stream's records."""

import math
import random

import pytest

from critique.analysis.memory import online, online_loop


def quadratic_root(e0, kappa, leniency, s):
    a, b, c = kappa * (leniency - s), e0 * (leniency - s) + s - kappa * leniency, -e0 * leniency
    roots = [(-b + sign * math.sqrt(b * b - 4 * a * c)) / (2 * a) for sign in (1, -1)]
    return min(r for r in roots if 0 <= r <= 1)


def test_without_contamination_the_attractor_is_the_share_of_lenient_entries():
    e0, leniency, s = 0.3, 0.5, 0.9
    assert online_loop.attractor(e0, 0.0, leniency, s) == pytest.approx(e0 * leniency / (e0 * leniency + (1 - e0) * s))


@pytest.mark.parametrize("e0, kappa, leniency, s",
                         [(0.3, 0.38, 0.5, 0.9), (0.2, 0.6, 0.8, 0.7), (0.4, -0.2, 0.3, 0.95)])
def test_the_attractor_is_the_root_of_the_quadratic(e0, kappa, leniency, s):
    expected = quadratic_root(e0, kappa, leniency, s)
    assert online_loop.attractor(e0, kappa, leniency, s) == pytest.approx(expected, abs=1e-9)


def test_nothing_stored_as_right_has_no_attractor():
    assert online_loop.attractor(0.3, 0.2, 0.0, 0.0) is None


def synthetic_stream(e0, kappa, leniency, s, steps=4000, shown=5, seed=0) -> dict:
    """A stream's records from a write-back loop with known parameters: each step is shown `shown` notes drawn
    from those written so far, errs with probability e0 + kappa * p (p: the share of its trusted notes that are
    wrong), and writes back a note stored as right with probability `leniency` when wrong, `s` when right."""
    rng = random.Random(seed)
    versions, records = [], []
    for step in range(steps):
        seen = rng.sample(versions, min(shown, len(versions)))
        trusted = [v for v in seen if v["verdict"] == 1]
        p = sum(v["truth"] == 0 for v in trusted) / len(trusted) if trusted else 0.0
        right = rng.random() >= min(1.0, max(0.0, e0 + kappa * p))
        records.append({"step": step, "correct": right, "user": None, "item_id": f"i{step}", "prompt_tokens": 10,
                        "memory_notes": len(versions),
                        "retrieved_versions": [f"{v['note']}@1" for v in seen]})
        stored_right = rng.random() < (s if right else leniency)
        versions.append({"note": f"stream:i{step}", "version": 1, "status": "active", "step": step,
                         "verdict": int(stored_right), "truth": int(right)})
    label = {"model": "m", "dataset": "d", "feedback": "self", "start": "empty", "conflicts": "append",
             "rank": "similarity", "order": 0}
    return {"label": label, "steps": records, "versions": versions}


@pytest.mark.parametrize("e0, kappa, leniency, s", [(0.3, 0.4, 0.6, 0.9), (0.25, 0.0, 0.5, 0.8)])
def test_a_synthetic_loop_settles_at_the_attractor_the_table_predicts(e0, kappa, leniency, s):
    truth = online_loop.attractor(e0, kappa, leniency, s)
    row = online.summary(synthetic_stream(e0, kappa, leniency, s), None)
    assert row["l"] == pytest.approx(leniency, abs=0.05) and row["s"] == pytest.approx(s, abs=0.03)
    assert row["e0"] == pytest.approx(e0, abs=0.05) and row["kappa"] == pytest.approx(kappa, abs=0.2)
    assert row["attractor"] == pytest.approx(truth, abs=0.04)  # predicted from the records
    assert row["corrupted"] == pytest.approx(truth, abs=0.04)  # reached by the loop


def test_a_stronger_contamination_settles_higher():
    low = online.summary(synthetic_stream(0.3, 0.0, 0.6, 0.9), None)
    high = online.summary(synthetic_stream(0.3, 0.5, 0.6, 0.9), None)
    assert high["attractor"] > low["attractor"] + 0.03 and high["corrupted"] > low["corrupted"] + 0.03


def confounded_stream(steps=3000, seed=1) -> tuple[dict, dict]:
    """(stream, memory-off arm) where hard questions retrieve more wrong-but-trusted notes and fail more, but a
    step's error does not depend on what it is shown: only the question's difficulty matters."""
    rng = random.Random(seed)
    versions, records, off = [], [], []
    for step in range(steps):
        hard = rng.random() < 0.5
        shown = []
        for j in range(5):
            wrong = rng.random() < (0.7 if hard else 0.1)
            versions.append({"note": f"n{step}-{j}", "version": 1, "status": "active", "step": None,
                             "verdict": 1, "truth": 0 if wrong else 1})
            shown.append(f"n{step}-{j}@1")
        right = rng.random() >= (0.9 if hard else 0.1)
        records.append({"step": step, "correct": right, "user": None, "item_id": f"i{step}", "prompt_tokens": 10,
                        "memory_notes": 5, "retrieved_versions": shown})
        off.append({"step": step, "correct": not hard, "user": None, "item_id": f"i{step}"})
    label = {"model": "m", "dataset": "d", "feedback": "self", "start": "train", "conflicts": "append",
             "rank": "similarity", "order": 0}
    return ({"label": label, "steps": records, "versions": versions},
            {"label": {**label, "feedback": "none", "start": "empty"}, "steps": off, "versions": []})


def test_the_slope_within_the_memory_off_arms_strata_takes_the_questions_difficulty_out():
    stream, off = confounded_stream()
    row = online.summary(stream, off)
    assert row["kappa"] > 0.5  # pooled: wrong notes go with hard questions
    assert abs(row["kappa_within"]) < 0.1  # within difficulty: what is shown does not matter
    assert online.summary(stream, None)["kappa_within"] is None


def _arm_stream(demote, demoted: int, notes: int = 2) -> dict:
    versions = []
    for n in range(notes):
        versions.append({"note": f"stream:i{n}", "version": 1, "status": "active", "step": n, "verdict": 1,
                         "truth": 1, "why": "feedback"})
        if n < demoted:
            versions.append({"note": f"stream:i{n}", "version": 2, "status": "active", "step": n, "verdict": 1,
                             "truth": 1, "why": "demoted: test"})
    steps = [{"step": n, "correct": True, "user": None, "item_id": f"i{n}"} for n in range(notes)]
    label = {"model": "m", "dataset": "d", "feedback": "self", "start": "train", "conflicts": "append",
             "rank": "similarity", "order": 0, "demote": demote, "refresh": None, "disable": False}
    return {"label": label, "steps": steps, "versions": versions, "n_test": notes, "demote_count": demoted}


def test_a_verifier_that_demotes_every_note_has_no_random_control():
    every = online.arms([_arm_stream("reorder", 2), _arm_stream("random", 2)])[0]
    assert every["demoted"] == "2 / 2: every note, no control possible" and every["diff"] is None
    some = online.arms([_arm_stream("reorder", 1), _arm_stream("random", 1)])[0]
    assert some["demoted"] == "1 / 1" and some["diff"] == 0.0


def _arm_answering(feedback: str, right: int, of: int) -> dict:
    steps = [{"step": n, "correct": n < right, "user": None, "item_id": f"i{n}"} for n in range(of)]
    label = {"model": "m", "dataset": "d", "feedback": feedback, "start": "train", "conflicts": "append",
             "rank": "similarity", "order": 0, "demote": None, "refresh": None, "disable": False}
    return {"label": label, "steps": steps, "versions": [], "n_test": of, "demote_count": None}


def test_no_arm_is_named_highest_when_its_interval_overlaps_another():
    close = online.arms([_arm_answering("self", 5, 6), _arm_answering("gold", 1, 6)])[0]  # 83% and 17% of 6
    assert close["highest"] == "none apart: self/train overlaps gold/train" and round(close["accuracy"], 1) == 83.3
    apart = online.arms([_arm_answering("self", 190, 200), _arm_answering("gold", 20, 200)])[0]
    assert apart["highest"] == "self/train" and apart["accuracy"] == 95.0
    tied = online.arms([_arm_answering("self", 3, 6), _arm_answering("gold", 3, 6)])[0]
    assert tied["highest"] == "none apart: every arm ends at the same accuracy" and tied["accuracy"] == 50.0


def _arm_giving(feedback: str, answers: str, gold: str) -> dict:
    """An arm whose steps gave ``answers`` (one a step) to questions whose gold labels are ``gold``."""
    arm = _arm_answering(feedback, 0, len(answers))
    arm["steps"] = [{**step, "answer": a, "gold": g, "correct": a == g, "timeout": False, "parse_failed": False,
                     "error": None} for step, a, g in zip(arm["steps"], answers, gold)]
    return arm


def test_a_stream_arm_that_gives_one_answer_to_everything_is_warned_of():
    problems: list[str] = []
    online.tables([], problems)  # no stream: nothing to warn of
    assert problems == []
    constant, mixed = _arm_giving("gold", "AAAAAAAAAA", "ABABABABAB"), _arm_giving("self", "AAAAABBBBA", "ABABABABAB")
    timed_out = _arm_giving("none", "AAAAAAAAAA", "ABABABABAB")
    timed_out["steps"][0]["timeout"] = True  # a reply cut at the token limit gave no answer
    said = online.one_answer([constant, mixed, timed_out])
    assert said == ['m x d: the stream arm gold/train answered "A" to 10 of 10 test questions (100%): its accuracy is '
                    "that label's share of the test set",
                    'm x d: the stream arm none/train answered "A" to 9 of 10 test questions (100% of the 9 it '
                    "answered): its accuracy says little beyond that label's share of the test set"]


def test_the_stream_plot_shades_each_windows_interval():
    from critique.analysis.study import report
    from critique.analysis.study.tabular import Table

    rows = [{"model": "m", "dataset": "d", "order": 0, "feedback": feedback, "start": "train", "demote": None,
             "conflicts": "append", "rank": "similarity", "window": w, "accuracy": 50.0, "ci_low": 20.0,
             "ci_high": 80.0, "trusted_wrong": 0.1} for feedback in ("self", "gold") for w in range(1, 4)]
    figure, why = report.plot_online(Table(online.WINDOWS_KEY, online.WINDOWS_TITLE, online.WINDOW_COLUMNS, rows))
    bands = [c for c in figure.axes[0].collections if len(c.get_paths())]
    assert why is None and len(bands) == 2  # one shaded interval per arm
    assert bands[0].get_paths()[0].vertices[:, 1].min() == 20.0 and bands[0].get_paths()[0].vertices[:, 1].max() == 80.0
