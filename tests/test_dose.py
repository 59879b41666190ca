"""critique probe dose on the fake provider with a scripted performance agent whose behaviour is planted: on the
positive control it answers half the questions right without memory, every one right when shown one or two of
its own notes, none when shown eight, and ignores another dataset's notes (mcr-gen's). The table must recover
exactly that curve, the irrelevant control flat at none's accuracy, and rule R7's check: an answer a shown note
asserts that the question does not hold."""

from __future__ import annotations

import hashlib
import json

from critique.base import rundir
from critique.cli import main
from critique.datasets.registry import resolve

LIMIT = 8
NOTE = "Critique: The correct answer is"


def planted():
    test = {i.question: i.answer for i in resolve("control-pos").test[:LIMIT]}
    known = set(list(test)[:LIMIT // 2])

    def answer(prompt, options, props):
        asked = next((q for q in test if q in prompt), None)
        if asked is None:
            return None  # a train question (or mcr-gen's run): the fake's own answer
        gold, wrong = test[asked], next(o for o in options if o != test[asked])
        own = prompt.count(NOTE) - prompt.count("Conditions:")  # mcr-gen's questions hold "Conditions:"
        if 1 <= own <= 2:
            return {"answer": gold}
        if own >= 8:
            return {"answer": wrong}
        return {"answer": gold if asked in known else wrong}

    return answer


def test_the_table_recovers_the_planted_curve(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", planted())
    other = home / "other"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
                 "--strategies", "EP_CRIT", "--out", str(other)]) == 0
    out = home / "dose"
    args = ["probe", "dose", "--dataset", "control-pos", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
            "--values", "8,1,2", "--irrelevant", str(other), "--out", str(out)]
    capsys.readouterr()
    assert main(args) == 0
    assert f"at most {2 * LIMIT + LIMIT * 7} calls" in capsys.readouterr().err
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    memory = hashlib.sha256((other / "memory" / "episodic.jsonl").read_bytes()).hexdigest()
    assert manifest["probe"] == {"name": "dose", "values": [1, 2, 8], "irrelevant_dataset": "mcr-gen",
                                 "irrelevant_memory": memory}
    assert str(other) not in (out / "predictions.jsonl").read_text() + (out / "calls.jsonl").read_text()
    from critique.analysis.__main__ import main as analysis_main

    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    rows = {r["arm"]: r for r in json.loads(capsys.readouterr().out)["dose"]}
    assert set(rows) == {"none", "own@1", "own@2", "own@8", "irrelevant@1", "irrelevant@2", "irrelevant@8"}
    assert rows["none"]["accuracy"] == 50.0 and rows["none"]["memory_only"] is None
    for arm in ("own@1", "own@2"):
        assert (rows[arm]["accuracy"], rows[arm]["vs_none"], rows[arm]["wins"], rows[arm]["losses"]) == \
            (100.0, 50.0, 4, 0)
        assert rows[arm]["memory_only"] == 100.0  # the twin's note asserts the gold label; no question holds it
    assert (rows["own@8"]["accuracy"], rows["own@8"]["vs_none"], rows["own@8"]["shown"]) == (0.0, -50.0, 8.0)
    for k in (1, 2, 8):
        row = rows[f"irrelevant@{k}"]
        assert (row["accuracy"], row["vs_none"], row["shown"]) == (50.0, 0.0, float(k))
    assert rows["own@8"]["prompt_tokens"] > rows["own@2"]["prompt_tokens"] > rows["own@1"]["prompt_tokens"]
    fake_llm.CALLS.clear()
    assert main(args) == 0 and fake_llm.CALLS == []  # resumed: nothing more
    moved = other.rename(home / "moved")  # the control is named by its memory, not where it lies
    assert main([*args[:-4], "--irrelevant", str(moved), "--out", str(out)]) == 0 and fake_llm.CALLS == []


def test_a_resume_with_other_irrelevant_memory_is_refused(home, fake_llm, capsys):
    other = home / "other"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "2", "--quiet",
                 "--strategies", "EP_CRIT", "--out", str(other)]) == 0
    args = ["probe", "dose", "--dataset", "control-pos", "--model", "fake/model", "--limit", "2", "--quiet",
            "--values", "1", "--irrelevant", str(other), "--out", str(home / "dose")]
    assert main(args) == 0
    episodic = other / "memory" / "episodic.jsonl"
    episodic.write_text(episodic.read_text().splitlines()[0] + "\n")
    capsys.readouterr()
    assert main(args) == 2
    assert "holds a run with probe=" in capsys.readouterr().err


def test_a_run_on_preference_data_or_no_run_is_refused_as_the_control(home, fake_llm, capsys):
    args = ["probe", "dose", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "2", "--quiet",
            "--out", str(home / "dose")]
    assert main([*args, "--irrelevant", str(home / "nowhere")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main([*args, "--values", "0"]) == 2
    assert "values must be whole numbers of at least 1" in capsys.readouterr().err


def test_a_study_file_runs_it(tmp_path):
    from critique.experiments.study.file import load

    path = tmp_path / "study.toml"
    path.write_text('datasets = ["mcr-gen"]\nstrategies = ["EP_CRIT"]\n[[models]]\nname = "fake/model"\n'
                    "[probes.dose]\nvalues = [4, 1]\n")
    assert load(path).probes["dose"]["probes"] == [{"name": "dose", "values": [1, 4], "irrelevant": None,
                                                   "irrelevant_dataset": None, "irrelevant_memory": None}]


def test_the_lexical_check_cannot_fire_where_the_question_lists_every_option():
    from critique.experiments.dose import memory_only

    listed = "Which ordering? 1. pliers, euro 2. euro, pliers"
    assert memory_only("1", listed, [{"asserted": "1"}, {"asserted": "2"}]) is None  # not a 0: no finding
    lacking = "Is the statement true: lemons are sour"
    assert memory_only("yes", lacking, [{"asserted": "yes"}]) is True
    assert memory_only("no", lacking, [{"asserted": "yes"}]) is False
    assert memory_only("1", listed, [{"asserted": "1"}, {"asserted": "yes"}]) is False  # "yes": only the note has it
    assert memory_only("yes", lacking, [{"asserted": None}]) is None
