"""Credit that is learned (analysis.memory.credit_model): on entries whose deletion credit is planted by a logged
feature (an entry whose initial answer was right is load-bearing, one whose answer was wrong is toxic), the
estimate fitted on half the entries ranks the other half as the credit does, is calibrated, and prunes what
pruning by measured credit prunes, better than random; credit flows along a note's version chain."""

from __future__ import annotations

import pytest

from critique.analysis.memory import credit_model as model

ENTRIES = 40


def planted():
    entries, full, credit_rows = [], [], []
    for n in range(ENTRIES):
        right = n % 3 != 0
        entry_id = f"e{n:02d}"
        entries.append({"id": entry_id, "initial_answer": "1", "gold": "1" if right else "2", "asserted": "1"})
        credit_rows.append({"id": entry_id, "credit": 1 if right else -1})
        full.append({"retrieved": [entry_id, f"e{(n + 1) % ENTRIES:02d}"], "retrieved_scores": [0.8, 0.7]})
    return entries, credit_rows, full


def test_the_estimate_recovers_a_planted_credit():
    entries, credit_rows, full = planted()
    rows = model.features(entries, credit_rows, full)
    assert len(rows) == ENTRIES and {r["initial_right"] for r in rows} == {0.0, 1.0}
    fitted = [r for r in rows if not model.held_out(r["id"])]
    judged = [r for r in rows if model.held_out(r["id"])]
    assert len(fitted) >= 4 and len(judged) >= 4
    guess = model.estimate(model.fit(fitted), judged)
    credit = [float(r["credit"]) for r in judged]
    assert all((g > 0) == (c > 0) for g, c in zip(guess, credit))  # every held-out entry on the right side
    bins = model.calibration(guess, credit)
    assert [b["credit"] for b in bins] == sorted(b["credit"] for b in bins)  # calibrated: credit rises with it
    prune = model.pruning(guess, credit)
    assert prune["budget"] == sum(c < 0 for c in credit)
    assert prune["by_estimate"] == prune["by_credit"] == -prune["budget"] < prune["at_random"]


def test_a_never_shown_entry_is_left_out_and_a_missing_similarity_is_the_mean():
    entries, credit_rows, full = planted()
    full = [{"retrieved": p["retrieved"], "retrieved_scores": None} for p in full[:-1]]
    rows = model.features(entries + [{"id": "never", "initial_answer": "1", "gold": "1"}], credit_rows, full)
    assert "never" not in {r["id"] for r in rows} and all(r["similarity"] is None for r in rows)
    assert "similarity" not in model.fit(rows)[0]  # no value anywhere: not a feature


def test_credit_flows_along_a_version_chain():
    versions = [{"note": "n", "version": 1, "replaces": None}, {"note": "n", "version": 2, "replaces": "n@1"},
                {"note": "n", "version": 3, "replaces": "n@2"}, {"note": "m", "version": 1, "replaces": None}]
    chain = model.propagated(versions, {"n@1": 1.0, "n@3": -1.0, "m@1": 2.0})
    assert chain == pytest.approx({"n@1": 1.0, "n@2": 0.5, "n@3": -0.75, "m@1": 2.0})


def test_the_split_never_reads_credit():
    assert model.held_out("e01") == model.held_out("e01")
    assert 0 < sum(model.held_out(f"e{n:02d}") for n in range(ENTRIES)) < ENTRIES
