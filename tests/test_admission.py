"""Admission at write time (--admission instruction; critique.engine.memory.admission): which sentences are
instructions; on the fake provider, a critic whose critiques of items labelled "1" state only the outcome and a
performance agent that answers wrong whenever it is shown such a note: the rejected notes are logged with why,
never shown, and the admission table recovers both the rejected share and the planted gain against the admit-all
run on the same items; a stream refuses them at write-back, and a rerun makes no call."""

from __future__ import annotations

import json

import pytest

from critique.base import rundir
from critique.cli import main
from critique.datasets.registry import resolve
from critique.engine.memory import admission

LIMIT = 12
OUTCOME = "The answer to this question was"


@pytest.mark.parametrize("sentence, expected", [
    ("Apply the high-priority condition first.", True),
    ("First, check every condition against each ordering.", True),
    ("If an item is a city, put it at the beginning.", True),
    ("When two conditions conflict, the high one wins, so favour it.", True),
    ("You should read the conditions in order of priority.", True),
    ("It is important to understand the structure of the registry.", True),
    ("Never trust the length condition over the high one.", True),
    ("The agent's response is correct because the conditions are met.", False),
    ("The correct answer is 2.", False),
    ("The items are ranked by the three conditions in the order 1, 2, 3.", False),
    ("This question is a general lesson that would help the agent answer similar questions correctly.", False),
    ("If the user likes comedies, the answer is A.", False),
])
def test_which_sentences_are_instructions(sentence, expected):
    assert admission.instruction(sentence) is expected


def test_an_entry_is_admitted_for_one_instruction_in_either_reason():
    outcome = {"critique": {"local_reason": "The answer was 2.", "global_reason": "It was right."}}
    taught = {"critique": {"local_reason": "The answer was 2.", "global_reason": "It was right. Check the high "
                                                                                 "condition first."}}
    assert admission.rejection("instruction", outcome).startswith("no instruction")
    assert admission.rejection("instruction", taught) is None and admission.rejection("all", outcome) is None
    kept, rejected = admission.admitted("instruction", [outcome, taught])
    assert kept == [taught] and rejected[0]["reason"].startswith("no instruction")


def planted():
    test = {i.question: i.answer for i in resolve("mcr-gen").test[:LIMIT]}

    def answer(prompt, options, props):
        asked = next((q for q in test if q in prompt), None)
        if asked is None:
            return None  # a train question: the fake's own answer
        gold = test[asked]
        return {"answer": next(o for o in options if o != gold) if OUTCOME in prompt else gold}

    return answer


def run(home, out, *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
                 "--strategies", "zero_shot,EP_CRIT", "--out", str(home / out), *extra])


def test_an_admitting_run_never_takes_the_folder_of_the_run_without():
    from critique.base.config import RunConfig
    from critique.runner import run_name

    config = RunConfig(dataset="mcr-gen", model="fake/model")
    assert run_name(config) == "mcr-gen__fake_model"
    assert run_name(RunConfig(dataset="mcr-gen", model="fake/model", admission="instruction")) == \
        "mcr-gen__fake_model__admission-instruction"


def test_rejected_notes_are_logged_never_shown_and_the_table_recovers_the_gain(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_OUTCOME_NOTES", "1")
    monkeypatch.setattr(fake_llm, "ANSWER", planted())
    assert run(home, "all") == 0
    assert run(home, "admitted", "--admission", "instruction") == 0
    err = capsys.readouterr().err
    train = resolve("mcr-gen").train[:LIMIT]
    outcome_ids = {i.id for i in train if i.answer == "1"}
    assert 0 < len(outcome_ids) < LIMIT
    assert f"{len(outcome_ids)} of {LIMIT} critiques kept out of memory" in err
    assert f"{LIMIT} of {LIMIT} critiques parsed and {LIMIT - len(outcome_ids)} entered memory " \
           f"({len(outcome_ids)} kept out by --admission)" in err
    memory = home / "admitted" / rundir.MEMORY
    rejected = rundir.read_jsonl(memory / admission.REJECTED)
    assert {r["item_id"] for r in rejected} == outcome_ids and all(r["reason"].startswith("no instruction")
                                                                   for r in rejected)
    assert {e["item_id"] for e in rundir.read_jsonl(memory / "episodic.jsonl")} == {i.id for i in train} - outcome_ids
    messages = [c["messages"] for c in rundir.read_jsonl(home / "admitted" / rundir.CALLS) if c["stage"] == "test"]
    assert messages and not any(OUTCOME in m["content"] for ms in messages for m in ms)
    manifest = json.loads((home / "admitted" / rundir.MANIFEST).read_text())
    assert manifest["config"]["admission"] == "instruction"

    def shown_outcome(p):
        return bool(set(p["retrieved"]) & outcome_ids)

    before = {p["item_id"]: p for p in rundir.read_jsonl(home / "all" / rundir.PREDICTIONS)
              if p["stage"] == "test" and p["strategy"] == "EP_CRIT"}
    gained = sum(shown_outcome(p) for p in before.values())
    assert gained > 0

    from critique.analysis.__main__ import main as analysis_main

    assert analysis_main(["tables", str(home / "all"), str(home / "admitted"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["admission"]
    assert [r["strategy"] for r in rows] == ["EP_CRIT"]
    row = rows[0]
    assert (row["critiques"], row["rejected"]) == (LIMIT, len(outcome_ids))
    assert row["rejected_share"] == pytest.approx(100.0 * len(outcome_ids) / LIMIT)
    assert (row["accuracy"], row["wins"], row["losses"]) == (100.0, gained, 0)
    assert row["vs_admit_all"] == pytest.approx(100.0 * gained / LIMIT)
    assert row["twin"] == str(home / "all")

    fake_llm.CALLS.clear()
    assert run(home, "admitted", "--admission", "instruction") == 0 and fake_llm.CALLS == []


def test_a_stream_refuses_notes_at_write_back(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_OUTCOME_NOTES", "1")
    out = home / "stream"
    args = ["stream", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--quiet",
            "--feedback", "gold", "--admission", "instruction", "--out", str(out)]
    assert main(args) == 0
    rejected = rundir.read_jsonl(out / rundir.MEMORY / admission.REJECTED)
    from_train = [r for r in rejected if r.get("step") is None]
    from_stream = [r for r in rejected if r.get("step") is not None]
    ones = {i.id for i in resolve("mcr-gen").test[:LIMIT] if i.answer == "1"}
    assert {r["item_id"] for r in from_stream} == ones and from_train
    notes = rundir.read_jsonl(out / rundir.MEMORY / rundir.NOTES)
    assert not {n["entry"]["item_id"] for n in notes if n.get("step") is not None} & ones
    fake_llm.CALLS.clear()
    assert main(args) == 0 and fake_llm.CALLS == []
    assert rundir.read_jsonl(out / rundir.MEMORY / admission.REJECTED) == rejected
