"""critique probe conditioning on the fake provider with a scripted performance agent whose behaviour is planted:
it answers every train question right (so every entry is a trophy), half of the test questions right without a
preamble or with one past outcome, none of them with four or more past outcomes, and all of them with the
procedures preamble. The table must recover exactly that: procedures +50 points, outcomes@1 0, longer outcomes
-50, each against none on the same items."""

from __future__ import annotations

import json

import pytest

from critique.base import rundir
from critique.cli import main
from critique.datasets.registry import resolve

LIMIT = 8


def planted(home):
    """The scripted agent, and the test questions it knows without help."""
    dataset = resolve("mcr-gen")
    train = {i.question: i.answer for i in dataset.train[:LIMIT]}
    test = {i.question: i.answer for i in dataset.test[:LIMIT]}
    known = set(list(test)[:LIMIT // 2])

    def wrong(gold, options):
        return next(o for o in options if o != gold)

    def answer(prompt, options, props):
        asked = next((q for q in test if q in prompt), None)
        if asked is None:  # a train question: always right
            asked = next(q for q in train if q in prompt)
            return {"answer": train[asked]}
        gold = test[asked]
        if "Lessons from the reviews" in prompt:
            return {"answer": gold}
        outcomes = prompt.count("(answered right):")
        if outcomes >= 4:
            return {"answer": wrong(gold, options)}
        return {"answer": gold if asked in known else wrong(gold, options)}

    return answer


def probe(home, *extra):
    return main(["probe", "conditioning", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT),
                 "--quiet", "--out", str(home / "conditioning"), *extra])


def test_the_table_recovers_the_planted_effects(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", planted(home))
    assert probe(home, "--lengths", "16,1,4") == 0
    captured = capsys.readouterr()
    assert f"at most {2 * LIMIT + LIMIT * 7} calls" in captured.err  # train stage, then none + 2 kinds x 3 lengths
    out = home / "conditioning"
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["probe"] == {"name": "conditioning", "lengths": [1, 4, 16]}
    records = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "probe"]
    assert {p["strategy"] for p in records} == {"none", "outcomes@1", "outcomes@4", "outcomes@16", "procedures@1",
                                                "procedures@4", "procedures@16"}
    by_arm = {}
    for p in records:
        by_arm.setdefault(p["strategy"], []).append(p)
        assert p["preamble"] == p["strategy"].split("@")[0]  # the experiment's fields, as a reader sees them
    for length in (1, 4, 16):  # the same entries in both kinds, a shorter preamble's first of a longer one's
        outcomes = {p["item_id"]: p["entries"] for p in by_arm[f"outcomes@{length}"]}
        procedures = {p["item_id"]: p["entries"] for p in by_arm[f"procedures@{length}"]}
        assert outcomes == procedures and all(len(e) == min(length, LIMIT) for e in outcomes.values())
    first = by_arm["outcomes@16"][0]["entries"]
    assert by_arm["outcomes@4"][0]["entries"] == first[:4]

    capsys.readouterr()
    from critique.analysis.__main__ import main as analysis_main

    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    rows = {r["arm"]: r for r in json.loads(capsys.readouterr().out)["conditioning"]}
    assert rows["none"]["accuracy"] == pytest.approx(50.0)
    for length in (1, 4, 16):
        row = rows[f"procedures@{length}"]
        assert (row["accuracy"], row["vs_none"], row["wins"], row["losses"]) == (100.0, 50.0, 4, 0)
    assert (rows["outcomes@1"]["vs_none"], rows["outcomes@1"]["wins"], rows["outcomes@1"]["losses"]) == (0.0, 0, 0)
    for length in (4, 16):
        row = rows[f"outcomes@{length}"]
        assert (row["accuracy"], row["vs_none"], row["wins"], row["losses"]) == (0.0, -50.0, 0, 4)
        assert row["p"] == pytest.approx(0.125) and row["entries"] == min(length, LIMIT)
    assert rows["outcomes@1"]["p"] is None and rows["outcomes@1"]["p_holm"] is None
    assert rows["procedures@4"]["prompt_tokens"] > rows["procedures@1"]["prompt_tokens"] > rows["none"]["prompt_tokens"]

    fake_llm.CALLS.clear()
    assert probe(home, "--lengths", "1,4,16") == 0 and fake_llm.CALLS == []  # resumed: nothing more


def test_a_plain_run_answers_the_train_stage_and_the_memory_off_arm(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", planted(home))
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
                 "--strategies", "zero_shot,EP_CRIT", "--out", str(home / "plain")]) == 0
    fake_llm.CALLS.clear()
    assert probe(home, "--lengths", "2") == 0
    assert len(fake_llm.CALLS) == 2 * LIMIT  # outcomes@2 and procedures@2 only: the rest is the plain run's
    plain = {p["item_id"]: p for p in rundir.read_jsonl(home / "plain" / rundir.PREDICTIONS)
             if p["strategy"] == "zero_shot"}
    for p in rundir.read_jsonl(home / "conditioning" / rundir.PREDICTIONS):
        if p["strategy"] == "none":
            assert p["request_hash"] == plain[p["item_id"]]["request_hash"]


@pytest.mark.parametrize("lengths, problem", [("0", "at least 1"), ("2,x", "'x'"), ("", "at least 1")])
def test_bad_lengths_are_refused_in_one_line(home, fake_llm, capsys, lengths, problem):
    assert probe(home, "--lengths", lengths) == 2
    assert problem in capsys.readouterr().err


def test_a_study_file_runs_it(home, tmp_path):
    from critique.experiments.study.file import load

    path = tmp_path / "study.toml"
    path.write_text('datasets = ["mcr-gen"]\nstrategies = ["zero_shot"]\n[[models]]\nname = "fake/model"\n'
                    "[probes.conditioning]\nlengths = [8, 2]\n")
    study = load(path)
    assert study.probes["conditioning"]["probes"] == [{"name": "conditioning", "lengths": [2, 8]}]
    path.write_text(path.read_text().replace("[8, 2]", "[0]"))
    with pytest.raises(Exception, match="probes.conditioning: lengths must be whole numbers of at least 1"):
        load(path)
