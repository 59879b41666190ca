"""critique probe priors on the fake provider with a scripted performance agent whose behaviour is planted: shown
notes as they are, it answers the option the nearest one asserts; shown them marked as priors, it answers the
gold label where the nearest note is wrong (it drops the contradicted prior) and the note's option where it is
right. The table must recover exactly that: followed_wrong 100 then 0, accuracy where the note is wrong 0 then
100, and the marked arm ahead of the unmarked by the share of wrong notes."""

from __future__ import annotations

import json
import re

import pytest

from critique.base import rundir
from critique.cli import main
from critique.datasets.registry import resolve

LIMIT = 8
NOTE = re.compile(r"Critique: The correct answer is (\S+?)\.")


def planted():
    test = {i.question: i.answer for i in resolve("mcr-gen").test[:LIMIT]}

    def answer(prompt, options, props):
        notes = NOTE.findall(prompt)
        asked = next((q for q in test if q in prompt), None)
        if not notes or asked is None:
            return None  # the train stage: the fake's own answer
        if "[Prior:" in prompt and notes[0] != test[asked]:
            return {"answer": test[asked]}
        return {"answer": notes[0]}  # the paper set shows the nearest note first

    return answer


def probe(home):
    return main(["probe", "priors", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT),
                 "--quiet", "--out", str(home / "priors")])


def test_the_table_recovers_the_planted_effects(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", planted())
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
                 "--strategies", "EP_CRIT", "--out", str(home / "plain")]) == 0
    fake_llm.CALLS.clear()
    assert probe(home) == 0
    assert len(fake_llm.CALLS) == LIMIT  # the marked arm only: the train stage and the unmarked arm are the run's
    out = home / "priors"
    records = {(p["strategy"], p["item_id"]): p for p in rundir.read_jsonl(out / rundir.PREDICTIONS)
               if p["stage"] == "probe"}
    plain = {p["item_id"]: p for p in rundir.read_jsonl(home / "plain" / rundir.PREDICTIONS) if p["stage"] == "test"}
    messages = {c["request_hash"]: c["messages"][0]["content"] for c in rundir.read_jsonl(out / rundir.CALLS)}
    for item_id, p in plain.items():
        unmarked, prior = records[("unmarked", item_id)], records[("prior", item_id)]
        assert unmarked["request_hash"] == p["request_hash"]  # EP_CRIT's very request
        assert prior["retrieved"] == unmarked["retrieved"] and prior["prior"] and not unmarked["prior"]
        assert messages[prior["request_hash"]].count("[Prior:") == len(prior["retrieved"])
        assert prior["note_asserted"] == unmarked["note_asserted"] is not None
    wrong = sum(not r["note_right"] for (arm, _), r in records.items() if arm == "unmarked")
    assert 0 < wrong < LIMIT  # both kinds of item occur

    capsys.readouterr()
    from critique.analysis.__main__ import main as analysis_main

    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    rows = {r["arm"]: r for r in json.loads(capsys.readouterr().out)["priors"]}
    share_wrong = 100.0 * wrong / LIMIT
    unmarked, prior = rows["unmarked"], rows["prior"]
    assert unmarked["note_right"] == prior["note_right"] == pytest.approx(100 - share_wrong)
    assert (unmarked["followed_wrong"], prior["followed_wrong"]) == (100.0, 0.0)
    assert (unmarked["acc_note_wrong"], prior["acc_note_wrong"]) == (0.0, 100.0)
    assert unmarked["acc_note_right"] == prior["acc_note_right"] == 100.0
    assert prior["accuracy"] == 100.0 and unmarked["accuracy"] == pytest.approx(100 - share_wrong)
    assert (prior["vs_unmarked"], prior["wins"], prior["losses"]) == (pytest.approx(share_wrong), wrong, 0)

    fake_llm.CALLS.clear()
    assert probe(home) == 0 and fake_llm.CALLS == []  # resumed: nothing more


def test_a_study_file_runs_it(tmp_path):
    from critique.experiments.study.file import load

    path = tmp_path / "study.toml"
    path.write_text('datasets = ["mcr-gen"]\nstrategies = ["EP_CRIT"]\n[[models]]\nname = "fake/model"\n'
                    '[probes.priors]\ndatasets = ["mcr-gen"]\n')
    assert load(path).probes["priors"]["probes"] == [{"name": "priors"}]
