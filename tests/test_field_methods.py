"""The field's memory methods (critique.engine.field: ace, ace:nolabel, dc, expel) on the fake model: each runs end
to end with its offline stage logged under its own stages, keeps its notes with their sources, resumes after
kill -9 to the records of an uninterrupted run, makes no call when run again, and stops its offline stage at
--train-budget; and the pieces that follow their papers: ACE's playbook, ExpeL's rule operations."""

import json
from collections import Counter

import numpy as np
import pytest

from critique.base import rundir
from critique.cli import main
from critique.engine.field import insights
from critique.engine.field.playbook import Playbook
from killed import kill_after_calls

LIMIT = 6
METHODS = ("ace", "ace:nolabel", "dc", "expel")
STAGES = {"ace": {"ace_generate", "ace_reflect", "ace_curate"}, "ace:nolabel": {"ace_generate", "ace_reflect",
                                                                                  "ace_curate"},
          "dc": {"dc_generate", "dc_curate"}, "expel": {"expel_attempt", "expel_reflect", "expel_insight"}}


def argv(out, strategies: str, *extra: str) -> list[str]:
    return ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--k", "3",
            "--strategies", strategies, "--out", str(out), "--quiet", *extra]


def memory_of(out, name: str) -> dict:
    return json.loads((out / "memory" / f"{name.replace(':', '_')}.json").read_text(encoding="utf-8"))


def _normal(records: list[dict]) -> list[dict]:
    """Records without what differs between two run directories (run id, clock), in the order of their requests
    (the test stage's answers are logged as they come)."""
    drop = ("run_id", "time", "latency_s")
    return sorted(({k: v for k, v in r.items() if k not in drop} for r in records),
                  key=lambda r: (r["stage"], r.get("strategy") or "", r["request_hash"] or "", r["item_id"] or ""))


def test_each_method_learns_offline_under_its_own_stages_and_answers_every_test_question(home, fake_llm):
    out = home / "run"
    assert main(argv(out, ",".join(("zero_shot",) + METHODS))) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    for name in METHODS:
        learned = memory_of(out, name)["pools"]["all"]
        by_hash = {c["request_hash"]: c for c in calls}
        mine = [by_hash[h] for h in learned["requests"]]  # its calls (one asked first by ace:nolabel's twin: ace)
        assert {c["stage"] for c in mine} == STAGES[name], name
        assert {c["strategy"] for c in mine} <= {name, name.split(":")[0]}
        train = {f"mcr-{n:04d}" for n in range(LIMIT)}
        assert {c["item_id"] for c in mine} - {None} <= train
        assert learned["stopped"] is None and learned["offline_calls"] == len(mine)
        assert learned["offline_tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in mine)
        assert learned["notes"] and all(set(n["sources"]) <= train and n["sources"] for n in learned["notes"])
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    assert Counter(r["strategy"] for r in tests) == {name: LIMIT for name in ("zero_shot",) + METHODS}
    assert not any(r.get("error") for r in tests)
    ace = next(r for r in tests if r["strategy"] == "ace")
    assert ace["retrieved"] == [n["id"] for n in memory_of(out, "ace")["pools"]["all"]["notes"]]
    expel = next(r for r in tests if r["strategy"] == "expel")
    assert sum(i.startswith("trial:") for i in expel["retrieved"]) <= 3  # K successful trials at most
    fake_llm.CALLS.clear()
    assert main(argv(out, ",".join(METHODS))) == 0 and fake_llm.CALLS == []  # everything replays from the log


def test_the_label_free_variant_never_shows_a_label_and_the_labelled_one_does(home, fake_llm):
    out = home / "run"
    assert main(argv(out, "ace,ace:nolabel")) == 0
    reflections = [c for c in rundir.read_jsonl(out / "calls.jsonl") if c["stage"] == "ace_reflect"]
    text = {name: [c["messages"][0]["content"] for c in reflections if c["strategy"] == name]
            for name in ("ace", "ace:nolabel")}
    assert all("Ground Truth Answer:" in t for t in text["ace"])
    assert not any("Ground Truth Answer:" in t or "ground truth" in t.lower() for t in text["ace:nolabel"])


@pytest.mark.parametrize("name", METHODS + ("dc:online", "ace:online"))
def test_a_run_killed_in_the_offline_stage_resumes_to_the_records_of_an_uninterrupted_one(home, fake_llm, name):
    out, whole = home / "killed", home / "whole"
    command = kill_after_calls(argv(out, name, "--no-cache"), out, 7)
    assert len(rundir.read_jsonl(out / "calls.jsonl")) == 7
    assert main(command[2:]) == 0
    assert main(argv(whole, name, "--no-cache")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert _normal(calls) == _normal(rundir.read_jsonl(whole / "calls.jsonl"))
    assert len({c["request_hash"] for c in calls}) == len(calls)  # no call made twice
    offline = [c["request_hash"] for c in calls if c["stage"] != "test"]
    assert offline == memory_of(whole, name)["pools"]["all"]["requests"]  # the offline stage: in its order
    answers = rundir.read_jsonl(out / "predictions.jsonl")
    assert _normal(answers) == _normal(rundir.read_jsonl(whole / "predictions.jsonl"))
    assert memory_of(out, name)["pools"] == memory_of(whole, name)["pools"]


def test_train_budget_stops_each_offline_stage_and_a_larger_one_goes_on_from_the_same_calls(home, fake_llm):
    small, large = home / "small", home / "large"
    assert main(argv(small, ",".join(METHODS), "--train-budget", "1500", "--no-cache")) == 0
    assert main(argv(large, ",".join(METHODS), "--train-budget", "4000", "--no-cache")) == 0
    for name in METHODS:
        few, more = memory_of(small, name)["pools"]["all"], memory_of(large, name)["pools"]["all"]
        assert few["stopped"] == "budget" and few["train_budget"] == 1500
        assert 1500 <= few["offline_tokens"] < 4000 and few["offline_calls"] < more["offline_calls"]
        ask = [c["request_hash"] for c in rundir.read_jsonl(small / "calls.jsonl") if c["strategy"] == name
               and c["stage"] != "test"]
        then = [c["request_hash"] for c in rundir.read_jsonl(large / "calls.jsonl") if c["strategy"] == name
                and c["stage"] != "test"]
        assert then[:len(ask)] == ask  # the same stage, stopped later
    manifest = rundir.read_manifest(small)
    assert manifest["config"]["train_budget"] == 1500


def test_ace_playbook_adds_tags_and_merges_near_duplicates():
    book = Playbook()
    added = book.add([{"type": "ADD", "section": "COMMON MISTAKES TO AVOID", "content": "Check the order."},
                      {"type": "UPDATE", "section": "OTHERS", "content": "not applied"},
                      {"type": "ADD", "section": "nowhere", "content": "Read every condition."}], "q1")
    assert [b["id"] for b in added] == ["err-00001", "misc-00002"]
    book.tag([{"id": "err-00001", "tag": "helpful"}, {"id": "[misc-00002]", "tag": "harmful"},
              {"id": "gone", "tag": "helpful"}])
    assert [(b["helpful"], b["harmful"]) for b in book.bullets] == [(1, 0), (0, 1)]
    book.add([{"type": "ADD", "section": "OTHERS", "content": "Check the order!"}], "q2")
    same = {"Check the order.": [1.0, 0.0], "Read every condition.": [0.0, 1.0], "Check the order!": [0.99, 0.141]}
    gone = book.deduplicate(lambda texts: np.array([same[t] for t in texts]))
    assert gone == ["misc-00003"] and book.bullets[0]["sources"] == ["q1", "q2"]
    assert "[err-00001] helpful=1 harmful=0 :: Check the order." in book.render()
    assert book.used(["misc-00002"]).startswith("[misc-00002]") and book.used([]) == "(No bullets used by generator)"


def test_expel_operations_follow_the_reference_rules():
    rules = insights.Insights()
    rules.update(insights.parse(["ADD 1: Read the conditions in order of priority.", "ADD 2: A cut-off rule",
                                 "ADD 3: Never EDIT the question."]), ["q1"])
    assert [(r["text"], r["importance"]) for r in rules.rules] == [("Read the conditions in order of priority.", 2)]
    rules.update(insights.parse(["ADD 1: Check every option against each condition."]), ["q2"])
    rules.update(insights.parse(["AGREE 1: Read the conditions in order of priority.",
                                 "EDIT 2: Check every option against each condition, highest priority first.",
                                 "REMOVE 1: something no rule says."]), ["q3"])
    assert [(r["text"], r["importance"], r["sources"]) for r in rules.rules] == [
        ("Read the conditions in order of priority.", 3, ["q1", "q3"]),
        ("Check every option against each condition, highest priority first.", 3, ["q2", "q3"])]
    rules.update(insights.parse(["REMOVE 2: Check every option against each condition, highest priority first."]),
                 ["q4"])
    rules.update(insights.parse(["REMOVE 2: Check every option against each condition, highest priority first."]),
                 ["q5"])
    rules.update(insights.parse(["REMOVE 2: Check every option against each condition, highest priority first."]),
                 ["q6"])
    assert [r["text"] for r in rules.rules] == ["Read the conditions in order of priority."]  # 3 - 3 = 0: gone


def test_the_methods_table_compares_each_method_with_ours_item_by_item(home, fake_llm, tmp_path):
    from critique.analysis.stats.core import holm, sign_test

    out = home / "run"
    assert main(argv(out, "zero_shot,EP_LABEL,EP+SEM_CRIT,ace,dc,expel", "--train-budget", "3000")) == 0
    report = tmp_path / "tables.json"
    assert main(["tables", str(out), "--format", "json", "-o", str(report)]) in (0, 1)
    rows = json.loads(report.read_text(encoding="utf-8"))["methods"]
    assert {r["method"] for r in rows} == {"ace", "dc", "expel", "EP+SEM_CRIT"}
    answers = {}
    for r in rundir.read_jsonl(out / "predictions.jsonl"):
        if r["stage"] == "test":
            answers.setdefault(r["strategy"], {})[r["item_id"]] = r["correct"]
    for row in rows:
        learned = memory_of(out, row["method"])["pools"]["all"] if row["method"] in METHODS else None
        if learned:
            assert row["offline_tokens"] == learned["offline_tokens"] and row["stopped"] == "1 of 1 (budget)"
        mine, theirs = answers[row["method"]], answers[row["against"]]
        wins = sum(mine[i] and not theirs[i] for i in mine)
        losses = sum(theirs[i] and not mine[i] for i in mine)
        assert (row["wins"], row["losses"], row["p"]) == (wins, losses, sign_test(wins, losses))
        assert row["accuracy"] == pytest.approx(100 * sum(mine.values()) / LIMIT)
    assert [r["against"] for r in rows if r["method"] == "EP+SEM_CRIT"] == ["zero_shot"]
    family = [r for r in rows if r["p"] is not None]
    assert [r["p_holm"] for r in family] == holm([r["p"] for r in family])


def test_dspy_knn_retrieves_the_train_items_ep_label_retrieves_and_shows_their_labels(home, fake_llm):
    out = home / "run"
    assert main(argv(out, "EP_LABEL,dspy:knn", "--limit", "15", "--k", "5")) == 0
    shown: dict = {}
    for r in rundir.read_jsonl(out / "predictions.jsonl"):
        if r["stage"] == "test":
            shown.setdefault(r["item_id"], {})[r["strategy"]] = r["retrieved"]
    assert len(shown) == 15
    assert all(len(s["dspy:knn"]) == 5 and set(s["dspy:knn"]) == set(s["EP_LABEL"]) for s in shown.values())
    train = [json.loads(line) for line in (home / "data" / "mcr-gen" / "train.jsonl").read_text().splitlines()]
    gold = {record["question"]: record["answer"] for record in train}
    calls = [c for c in rundir.read_jsonl(out / "calls.jsonl") if c["strategy"] == "dspy:knn"]
    assert {c["stage"] for c in calls} == {"test"} and calls[0]["template"] == "dspy:JSONAdapter"
    for call in calls:  # each demo: a train question (user) and its gold label (assistant), as DSPy writes them
        demos = call["messages"][1:-1]
        assert [m["role"] for m in demos] == ["user", "assistant"] * 5
        for question, answer in zip(demos[0::2], demos[1::2]):
            text = question["content"].split("[[ ## question ## ]]\n", 1)[1].strip()
            assert json.loads(answer["content"])["answer"] == gold[text]
    fake_llm.CALLS.clear()
    assert main(argv(out, "EP_LABEL,dspy:knn", "--limit", "15", "--k", "5")) == 0 and fake_llm.CALLS == []


def test_dc_online_learns_on_the_test_questions_in_the_streams_order_without_a_label(home, fake_llm):
    from critique.datasets.subsets import stream_order

    out = home / "run"
    assert main(argv(out, "zero_shot,dc:online")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    answers = [c for c in calls if c["strategy"] == "dc:online" and c["stage"] == "test"]
    curated = [c for c in calls if c["strategy"] == "dc:online" and c["stage"] == "dc_curate"]
    test = [json.loads(line) for line in (home / "data" / "mcr-gen" / "test.jsonl").read_text().splitlines()]
    order = [i.id for i in stream_order([_Item(r["id"]) for r in test[:LIMIT]], 0)]
    assert [c["item_id"] for c in answers] == order and [c["item_id"] for c in curated] == order
    gold = {r["id"]: r["answer"] for r in test}
    assert not any(f"Correct answer: {gold[c['item_id']]}" in c["messages"][0]["content"] for c in curated)
    for before, after in zip(curated, answers[1:]):  # each answer sees the cheatsheet the step before wrote
        sheet = json.loads(before["response"])["cheatsheet"]
        assert sheet in after["messages"][0]["content"]
    learned = memory_of(out, "dc:online")["pools"]["all"]
    assert learned["notes"][0]["sources"] == order and learned["offline_calls"] == LIMIT
    fake_llm.CALLS.clear()
    assert main(argv(out, "zero_shot,dc:online")) == 0 and fake_llm.CALLS == []


class _Item:
    def __init__(self, item_id: str):
        self.id, self.user = item_id, None


def test_ace_online_answers_each_test_question_then_learns_from_its_label(home, fake_llm):
    out = home / "run"
    assert main(argv(out, "ace:online")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    answers = [c for c in calls if c["stage"] == "test"]
    learning = [c for c in calls if c["stage"] != "test"]
    assert len(answers) == LIMIT and {c["stage"] for c in learning} <= {"ace_generate", "ace_reflect", "ace_curate"}
    assert {c["item_id"] for c in learning} <= {c["item_id"] for c in answers}  # it learns on the test questions
    assert all("Ground Truth Answer:" in c["messages"][0]["content"] for c in learning if c["stage"] == "ace_reflect")
    curated = next(n for n, c in enumerate(calls) if c["stage"] == "ace_curate")
    later = [c for c in calls[curated:] if c["stage"] == "test"]
    assert "(empty)" in answers[0]["messages"][0]["content"].split("Reflection:")[0]  # the first: no playbook yet
    assert later and all("helpful=" in c["messages"][0]["content"] for c in later)  # then the bullets learned
    learned = memory_of(out, "ace:online")["pools"]["all"]
    assert learned["offline_calls"] == len(learning) and learned["notes"]
    fake_llm.CALLS.clear()
    assert main(argv(out, "ace:online")) == 0 and fake_llm.CALLS == []


def test_the_audit_lists_each_methods_stage_and_notes_with_the_test_prompts_that_showed_them(home, fake_llm,
                                                                                            tmp_path, capsys):
    out = home / "run"
    assert main(argv(out, "ace,dc,dspy:knn", "--train-budget", "3000")) == 0
    report = tmp_path / "audit.json"
    assert main(["audit", str(out), "--format", "json", "--output", str(report)]) == 0
    audited = json.loads(report.read_text(encoding="utf-8"))["audits"][0]["methods"]
    assert {(m["method"], m["pool"]) for m in audited} == {("ace", "all"), ("dc", "all"), ("dspy:knn", "all")}
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    for m in audited:
        document = memory_of(out, m["method"])["pools"][m["pool"]]
        assert [n["id"] for n in m["notes"]] == [n["id"] for n in document["notes"]]
        assert [n["sources"] for n in m["notes"]] == [n["sources"] for n in document["notes"]]
        assert (m["offline_tokens"], m["stopped"]) == (document["offline_tokens"], document["stopped"])
        mine = [r for r in tests if r["strategy"] == m["method"]]
        assert (m["prompts"], m["right"]) == (len(mine), sum(r["correct"] for r in mine))
        for note in m["notes"]:
            showed = [r for r in mine if note["id"] in r["retrieved"]]
            assert (note["shown"], note["right"]) == (len(showed), sum(r["correct"] for r in showed))
    assert all(any(n["shown"] for n in m["notes"]) for m in audited)
    capsys.readouterr()
    assert main(["audit", str(out)]) == 0
    text = capsys.readouterr().out
    assert "### The field's methods: each offline stage" in text and "| ace | all |" in text


@pytest.mark.parametrize("name", ("ace", "expel", "dspy:knn"))
def test_credit_by_deletion_asks_each_test_prompt_without_each_note_it_showed(home, fake_llm, name, capsys):
    out = home / "run"
    assert main(argv(out, name, "--train-budget", "4000")) == 0
    source = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    logged = {c["request_hash"] for c in rundir.read_jsonl(out / "calls.jsonl")}
    notes = {n["id"]: n for n in memory_of(out, name)["pools"]["all"]["notes"]}
    fake_llm.CALLS.clear()
    assert main(["credit", str(out), "--strategy", name, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["credit", str(out), "--strategy", name, "--report", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    credit = home / f"run__credit-{name.replace(':', '_')}-test"
    answers = rundir.read_jsonl(credit / "predictions.jsonl")
    asked = {c["request_hash"]: c for c in rundir.read_jsonl(credit / "calls.jsonl")}
    full = {r["item_id"]: r for r in answers if r["strategy"] == "full"}
    assert {i: r["request_hash"] for i, r in full.items()} == {r["item_id"]: r["request_hash"] for r in source}
    deletions = [r for r in answers if r["strategy"].startswith("without:")]
    for r in source:  # one deletion per note shown, the others kept in their order
        mine = {d["removed"]: d for d in deletions if d["item_id"] == r["item_id"]}
        assert sorted(mine) == sorted(r["retrieved"])
        for note, d in mine.items():
            assert d["retrieved"] == [i for i in r["retrieved"] if i != note]
            marker = f"[{note}]" if name == "ace" else notes[note]["text"].split(" -> ")[0]
            text = "\n".join(m["content"] for m in asked[d["request_hash"]]["messages"])
            assert marker not in text and marker in "\n".join(m["content"] for m in
                                                               asked[r["request_hash"]]["messages"])
    offline = [c for c in asked.values() if c["stage"] not in ("credit", "credit_null")]
    assert all(c["cached"] for c in offline)  # the memory rebuilt from the source run's calls, no model call
    new = {d["request_hash"] for d in deletions} - logged
    assert len(fake_llm.CALLS) == len(new)
    assert summary["entries"] == len(notes) and summary["deletions"] == len(deletions)
