"""critique probe overturn on the fake provider with a scripted performance agent whose behaviour is known: it
follows a lone critique, the first of two plain ones, and the new review when provenance is shown. So the true
note wins only when it comes first, or always with provenance, and the table says so."""

from __future__ import annotations

import json
import re

import pytest

from critique.base import rundir
from critique.cli import main

NOTE = re.compile(r"Review (\d):\n(?:\(Source: (?P<source>[^.]*)\. Confidence: [^)]*\)\n)?"
                  r"(?:Critique: )?The correct answer is (?P<label>\S+?)\.")


def scripted(prompt, options, props):
    notes = list(NOTE.finditer(prompt))
    if notes:  # the overturn prompt
        if notes[0].group("source"):
            return {"answer": next(n.group("label") for n in notes if n.group("source").startswith("a new review"))}
        return {"answer": notes[0].group("label")}
    lone = re.search(r"Critique: The correct answer is (\S+?)\.", prompt)
    return {"answer": lone.group(1)} if lone else None


def probe(home, kind, *extra):
    return main(["probe", kind, "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--quiet",
                 "--out", str(home / kind), *extra])


def test_the_true_note_wins_as_the_scripted_agent_says(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    assert probe(home, "suggestibility") == 0
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert probe(home, "overturn") == 0
    captured = capsys.readouterr()
    assert "at most 36 calls" in captured.err  # 4 items x (1 + 2 + 6)
    assert len(fake_llm.CALLS) == 16  # only the four pair prompts per item: the rest is the suggestibility run's
    out = home / "overturn"
    records = {(p["strategy"], p["item_id"]): p for p in rundir.read_jsonl(out / rundir.PREDICTIONS)
               if p["stage"] == "probe"}
    alone = {(p["strategy"], p["item_id"]): p for p in rundir.read_jsonl(home / "suggestibility" / rundir.PREDICTIONS)
             if p["stage"] == "probe"}
    for key, p in alone.items():  # Table 4's very requests
        assert records[key]["request_hash"] == p["request_hash"] and records[key]["correct"] == p["correct"]
    messages = {c["request_hash"]: c["messages"][0]["content"] for c in rundir.read_jsonl(out / rundir.CALLS)}
    for (strategy, _), p in records.items():
        if "+" not in strategy:
            continue
        text = messages[p["request_hash"]]
        assert p["notes"] == strategy.split("@")[0].split("+") and p["provenance"] == strategy.endswith("@provenance")
        assert ("Source:" in text) == p["provenance"] and "Review 2:" in text
    capsys.readouterr()
    from critique.analysis.__main__ import main as analysis_main

    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    rows = {r["condition"]: r for r in json.loads(capsys.readouterr().out)["overturn"]}
    assert set(rows) == {"lying+truth", "truth+lying", "lying+truth@provenance", "truth+lying@provenance"}
    for condition, wins in (("lying+truth", 0.0), ("truth+lying", 100.0), ("lying+truth@provenance", 100.0),
                            ("truth+lying@provenance", 100.0)):
        row = rows[condition]
        assert row["wins"] == pytest.approx(wins) and row["overturn"] == pytest.approx(wins)
        assert (row["truth"], row["lying"], row["overturn_of"], row["n"]) == (100.0, 0.0, 4, 4)
    assert "Overturn:" in captured.out
    fake_llm.CALLS.clear()
    assert probe(home, "overturn") == 0 and fake_llm.CALLS == []  # resumed: nothing more


def test_rates_are_per_user_then_the_mean_over_users():
    from critique.analysis.study.cells import over_users, percent_correct

    records = [{"user": "u1", "correct": True}, {"user": "u1", "correct": False}, {"user": "u1", "correct": None},
               {"user": "u2", "correct": True}]
    assert percent_correct(records[:3]) == pytest.approx(100 / 3) and percent_correct([]) is None
    assert over_users(records, percent_correct) == pytest.approx((100 / 3 + 100) / 2)
    assert over_users(records, percent_correct, by_user=False) == pytest.approx(50.0)  # one pool
    assert over_users([], percent_correct) is None
