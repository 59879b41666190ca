"""critique stream on the fake model: each feedback mode writes what it should, a killed stream resumes to the
records of an uninterrupted one, a finished one makes no call, --conflicts revise overturns a wrong note that
append keeps (with its history), a disabled note is never retrieved, and the online table reads it all."""

import json
from pathlib import Path

import numpy as np
import pytest

from critique.base import rundir
from critique.cli import main
from critique.engine.memory.notes import Notes
from critique.experiments.stream import loop as stream_mod
from critique.experiments.stream.spec import parse_feedback, stream_probe
from killed import kill_after_calls

LIMIT = 6


def argv(out: Path, feedback: str, *extra: str, dataset: str = "mcr-gen") -> list[str]:
    return ["stream", "--dataset", dataset, "--model", "fake/model", "--limit", str(LIMIT), "--k", "3",
            "--feedback", feedback, "--out", str(out), "--quiet", *extra]


def steps(out: Path) -> list[dict]:
    return sorted((r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "stream"),
                  key=lambda r: r["step"])


def notes(out: Path) -> list[dict]:
    return rundir.read_jsonl(out / "memory" / "notes.jsonl")


def written(out: Path) -> list[dict]:
    return [v for v in notes(out) if v["note"].startswith("stream:")]


@pytest.mark.parametrize("feedback", ["gold", "noisy:0.5", "self", "none", "delayed:2"])
def test_each_feedback_mode_writes_back_what_it_should(home, fake_llm, feedback):
    out = home / "stream"
    assert main(argv(out, feedback)) == 0
    answered = steps(out)
    assert [r["step"] for r in answered] == list(range(LIMIT))
    assert {r["strategy"] for r in answered} == {"EP_CRIT"}
    train = [v for v in notes(out) if v["step"] is None]
    assert len(train) == LIMIT and all(v["feedback"] == "train" for v in train)
    mine = written(out)
    expected = {"none": 0, "delayed:2": LIMIT - 2}.get(feedback, LIMIT)
    assert len(mine) == expected and all(v["feedback"] == str(parse_feedback(feedback)) for v in mine)
    assert all(v["truth"] in (0, 1) and v["version"] == 1 and v["status"] == "active" for v in mine)
    # each note is written before the step after its feedback arrives, and later steps can retrieve it
    delay = 2 if feedback.startswith("delayed") else 0
    for v in mine:
        source = next(r for r in answered if f"stream:{r['item_id']}" == v["note"])
        assert v["step"] == source["step"] + delay
    sizes = [r["memory_notes"] for r in answered]
    assert sizes == [LIMIT + max(0, min(expected, n - delay)) for n in range(LIMIT)]
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert sum(c["stage"] == "stream_critique" for c in calls) == expected
    if feedback == "self":
        assert all(v["entry"]["verdict"] in ("right", "wrong") and v["entry"]["label"] is None for v in mine)
    if feedback == "noisy:0.5":
        assert sum(v["entry"]["label_flipped"] for v in mine) == LIMIT // 2
    fake_llm.CALLS.clear()
    assert main(argv(out, feedback)) == 0 and fake_llm.CALLS == []  # a finished stream makes no call


def _normal(records: list[dict]) -> list[dict]:
    """Records without what differs between two run directories (run id, clock)."""
    drop = ("run_id", "time", "latency_s")
    return [{k: v for k, v in r.items() if k not in drop} for r in records]


def test_a_stream_killed_at_a_step_resumes_to_the_records_of_an_uninterrupted_one(home, fake_llm):
    out, whole = home / "killed", home / "whole"
    answered = 2 * LIMIT + 5  # the train stage, then some steps: the next call is held until the kill
    command = kill_after_calls(argv(out, "gold", "--no-cache"), out, answered)
    assert len(rundir.read_jsonl(out / "calls.jsonl")) == answered
    partial = notes(out)  # written as the stream went: the train memory and the steps written back
    assert partial and len(partial) < LIMIT * 2
    assert main(command[2:]) == 0
    assert main(argv(whole, "gold", "--no-cache")) == 0
    assert _normal(steps(out)) == _normal(steps(whole))
    assert _normal([v["entry"] for v in notes(out)]) == _normal([v["entry"] for v in notes(whole)])
    assert [{**v, "entry": None} for v in notes(out)] == [{**v, "entry": None} for v in notes(whole)]
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert len({c["request_hash"] for c in calls}) == len(calls)  # no call made twice


def _twin_dataset(folder: Path) -> Path:
    """Train questions and test questions that repeat them nearly word for word (cosine about 0.97)."""
    folder.mkdir()
    card = {"name": "twins", "task": "Which vault holds the object? Answer 1, 2, 3 or 4.",
            "answer_space": ["1", "2", "3", "4"]}
    (folder / "dataset.json").write_text(json.dumps(card), encoding="utf-8")
    things = ["a walnut ledger from Tartu", "a tin saddle from Rovinj", "a glass lamp from Bergen",
              "a copper kettle from Porto", "an oak chest from Riga", "a silk fan from Lyon"]
    train = [{"id": f"tr-{n}", "question": f"Where is {t} kept?", "answer": str(n % 4 + 1)}
             for n, t in enumerate(things)]
    test = [{"id": f"te-{n}", "question": f"Where is {t} stored?", "answer": str(n % 4 + 1)}
            for n, t in enumerate(things)]
    for name, items in (("train.jsonl", train), ("test.jsonl", test)):
        (folder / name).write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return folder


def test_revise_overturns_a_wrong_note_that_append_keeps(home, fake_llm):
    data = _twin_dataset(home / "twins")
    # the train critic is shown a flipped label for every item: every train note asserts a wrong answer;
    # the stream's gold feedback on the twin question asserts the right one
    common = ("--critic", "noisy:1", "--conflict-similarity", "0.8")
    revise, append = home / "revise", home / "append"
    assert main(argv(revise, "gold", *common, "--conflicts", "revise", dataset=str(data))) == 0
    assert main(argv(append, "gold", *common, dataset=str(data))) == 0
    gold = {f"tr-{n}": str(n % 4 + 1) for n in range(LIMIT)}
    train_notes = {v["note"]: v for v in notes(append) if v["step"] is None}
    assert all(v["entry"]["asserted"] != gold[k] for k, v in train_notes.items())
    kept = {v["note"]: v for v in notes(append)}  # latest versions: append changes nothing
    assert all(kept[k]["status"] == "active" and kept[k]["entry"]["asserted"] != gold[k] for k in gold)
    latest = {v["note"]: v for v in notes(revise)}
    overturned = [k for k in gold if latest[k]["status"] == "revised"]
    assert overturned and all(latest[k]["entry"]["asserted"] == gold[k] for k in overturned)
    for k in overturned:  # the history keeps the wrong version, and the revision names it and its evidence
        history = [v for v in notes(revise) if v["note"] == k]
        assert [v["version"] for v in history] == list(range(1, len(history) + 1))
        assert history[0]["entry"]["asserted"] != gold[k] and history[-1]["replaces"] == f"{k}@{len(history) - 1}"
        assert history[-1]["sources"][0] == k and len(history[-1]["sources"]) == 2
    # a later step shown a revised note is shown its new version
    shown = [v for r in steps(revise) for v in r["retrieved_versions"]]
    assert any(v.split("@")[0] in overturned and v.endswith("@2") for v in shown) or len(overturned) == LIMIT


def test_memory_history_lists_every_version(home, fake_llm, capsys):
    data = _twin_dataset(home / "twins")
    out = home / "revise"
    assert main(argv(out, "gold", "--critic", "noisy:1", "--conflicts", "revise", "--conflict-similarity", "0.8",
                     dataset=str(data))) == 0
    note = next(v["note"] for v in notes(out) if v["status"] == "revised")
    capsys.readouterr()
    assert main(["memory", "history", str(out), note]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["version"] for x in lines] == list(range(1, len(lines) + 1)) and lines[-1]["status"] == "revised"
    assert main(["memory", "history", str(out), "no-such-note"]) == 2


def test_a_disabled_note_is_never_retrieved():
    store = Notes("d")
    vectors = {}
    for n in range(4):
        entry = {"id": f"e{n}", "item_id": f"i{n}", "user": None, "question": f"q{n}", "initial_answer": "1",
                 "gold": "1", "asserted": "1", "critique": {}}
        store.add(entry, step=None, feedback="train", why="test")
        vectors[entry["id"]] = np.eye(4, dtype=np.float32)[n]
    store.change("e2", status="disabled", step=0, feedback="gold", why="test", evidence="x")
    stream = stream_mod.Stream.__new__(stream_mod.Stream)
    stream.notes, stream.vectors = store, vectors
    stream.probe = stream_probe("gold")
    memory = stream.memory()
    found = memory.retrieve(np.eye(4, dtype=np.float32)[2], None, 4)
    assert "e2" not in [e["id"] for e in found] and len(found) == 3
    assert [v["status"] for v in store.history("e2")] == ["active", "disabled"]


def test_the_online_table_reads_a_stream_and_its_memory_off_arm(home, fake_llm, tmp_path):
    runs = []
    for feedback, start in (("gold", "train"), ("none", "empty")):
        out = home / f"{feedback}-{start}"
        assert main(argv(out, feedback, "--start", start)) == 0
        runs.append(out)
    report = tmp_path / "tables.json"
    assert main(["tables", *map(str, runs), "--format", "json", "-o", str(report)]) in (0, 1)
    tables = json.loads(report.read_text(encoding="utf-8"))
    rows = {r["feedback"]: r for r in tables["stream"]}
    assert rows["gold"]["steps"] == LIMIT and rows["gold"]["written"] == LIMIT
    assert rows["none"]["written"] == 0 and rows["gold"]["wins"] is not None
    right = sum(r["correct"] is True for r in steps(runs[0]))
    assert rows["gold"]["accuracy"] == pytest.approx(100 * right / LIMIT)
    assert len([r for r in tables["stream_windows"] if r["feedback"] == "gold"]) == 5
    page = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "-o", str(page)]) in (0, 1)
    assert '<img alt="Online memory over each stream"' in page.read_text(encoding="utf-8")


def test_rank_verdict_shows_the_notes_stored_as_right_first():
    store, vectors = Notes("d"), {}
    for n, asserted in enumerate(["2", "1", "2", "1"]):  # answer 1: the notes asserting 1 call it right
        store.add({"id": f"e{n}", "item_id": f"i{n}", "user": None, "question": f"q{n}", "initial_answer": "1",
                   "gold": "1", "asserted": asserted, "critique": {}}, step=None, feedback="train", why="test")
        vectors[f"e{n}"] = np.array([1.0, 0.1 * (3 - n)], dtype=np.float32) / np.hypot(1.0, 0.1 * (3 - n))
    stream = stream_mod.Stream.__new__(stream_mod.Stream)
    stream.notes, stream.vectors = store, vectors
    stream.probe = stream_probe("gold", rank="verdict")
    found = stream.memory().retrieve(np.array([1.0, 0.3], dtype=np.float32), None, 2)
    assert [e["id"] for e in found] == ["e1", "e3"]  # the nearest ones, e0 and e1, would be shown by similarity
    stream.probe = stream_probe("gold")
    assert [e["id"] for e in stream.memory().retrieve(np.array([1.0, 0.3], dtype=np.float32), None, 2)] == ["e0", "e1"]


def test_the_arms_of_one_stream_and_a_random_control_of_the_verifier_arms_budget(home, fake_llm, tmp_path):
    out = home / "arms"
    command = ["stream", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--k", "3", "--arms",
               "--out", str(out), "--quiet"]
    assert main(command) == 0
    runs = {p.name.split("__stream-")[1]: p for p in out.iterdir()}
    random = "self-deinflate-random" + _demoted(runs)
    assert sorted(runs) == ["gold", "none", "none-empty", "self", random, "self-deinflate-reorder"]
    off = rundir.read_jsonl(runs["none-empty"] / "calls.jsonl")
    assert off and all(c["template"] == "performance_zero_shot.j2" for c in off)  # memory off: zero_shot's prompt
    checks = [r for r in rundir.read_jsonl(runs["self-deinflate-reorder"] / "predictions.jsonl")
              if r["stage"] == "stream_verify"]
    flagged = sum(not r["survives"] for r in checks)
    assert len(checks) == LIMIT and 0 < flagged == int(_demoted(runs))
    demoted = [v for v in notes(runs["self-deinflate-reorder"]) if v["why"].startswith("demoted")]
    assert all(v["entry"]["doubtful"] for v in demoted)
    report = tmp_path / "tables.json"
    assert main(["tables", str(out), "--format", "json", "-o", str(report)]) in (0, 1)
    row = json.loads(report.read_text(encoding="utf-8"))["stream_arms"][0]
    assert row["arms"] == 6 and row["demoted"] == f"{flagged} / {flagged}"
    fake_llm.CALLS.clear()
    assert main(command) == 0 and fake_llm.CALLS == []


def _demoted(runs: dict) -> str:
    reorder = runs["self-deinflate-reorder"]
    return str(sum(v["why"].startswith("demoted") for v in notes(reorder)))


def _copy_the_first_example(prompt: str, options: list, props: dict) -> dict:
    """A model that answers what the first shown critique asserts, and 1 when it is shown none."""
    marker = "The correct answer is "
    if marker not in prompt:
        return {"answer": "1"}
    said = prompt.split(marker, 1)[1][:1]
    return {"answer": said if said in options else "1"}


def test_verification_by_disabling_disables_the_note_that_made_an_answer_wrong(home, fake_llm, monkeypatch):
    data = _twin_dataset(home / "twins")
    for name in ("train.jsonl", "test.jsonl"):  # every label 1; the train critic is shown another one
        path = data / name
        items = [{**json.loads(line), "answer": "1"} for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    monkeypatch.setattr(fake_llm, "ANSWER", _copy_the_first_example)
    out = home / "disable"
    command = ["stream", "--dataset", str(data), "--model", "fake/model", "--k", "1", "--feedback", "gold",
               "--critic", "noisy:1", "--disable-test", "--out", str(out), "--quiet"]
    assert main(command) == 0
    answered = steps(out)
    wrong = [r for r in answered if r["answer"] != "1"]
    retests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "stream_disable"]
    assert wrong and len(retests) == len(wrong)  # K = 1: one note to leave out per wrong answer
    assert all(r["answer"] == "1" and r["retrieved"] == [] for r in retests)  # right without its note
    disabled = {v["note"]: v for v in notes(out) if v["status"] == "disabled"}
    assert set(disabled) == {r["strategy"].split(":", 1)[1] for r in retests}
    for r in answered:  # a disabled note is never shown after it was disabled
        assert not any(v.split("@")[0] in disabled and r["step"] > disabled[v.split("@")[0]]["step"]
                       for v in r["retrieved_versions"])


def test_the_audit_reads_a_streams_notes_with_their_status_and_versions(home, fake_llm, tmp_path):
    data = _twin_dataset(home / "twins")
    out = home / "revise"
    assert main(argv(out, "gold", "--critic", "noisy:1", "--conflicts", "revise", "--conflict-similarity", "0.8",
                     dataset=str(data))) == 0
    report = tmp_path / "audit.json"
    assert main(["audit", str(out), "--format", "json", "-o", str(report)]) == 0
    audit = json.loads(report.read_text(encoding="utf-8"))["audits"][0]
    latest = {v["note"]: v for v in notes(out)}
    assert audit["experiment"] == "stream" and {e["id"] for e in audit["entries"]} == set(latest)
    for e in audit["entries"]:
        assert (e["status"], e["version"]) == (latest[e["id"]]["status"], latest[e["id"]]["version"])
        assert e["asserted"] == latest[e["id"]]["entry"]["asserted"]  # a revised note as revised
    shown = sum(len(r["retrieved"]) for r in steps(out))
    assert audit["summary"]["retrievals"] == shown  # reuse over the stream's own prompts
    text = tmp_path / "audit.md"
    assert main(["audit", str(out), "-o", str(text)]) == 0
    assert "| id | status | version |" in text.read_text(encoding="utf-8")


def test_credit_by_deletion_credits_each_note_version_a_step_showed(home, fake_llm, capsys):
    data = _twin_dataset(home / "twins")
    out = home / "revise"
    assert main(argv(out, "gold", "--critic", "noisy:1", "--conflicts", "revise", "--conflict-similarity", "0.8",
                     dataset=str(data))) == 0
    capsys.readouterr()
    assert main(["credit", str(out), "--strategy", "EP_CRIT", "--format", "json", "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "rebuilt full prompts differ" not in printed.err  # each step's prompt rebuilt to its very request
    report = json.loads(printed.out[printed.out.index("{"):])
    shown = {v for r in steps(out) for v in r["retrieved_versions"]}
    assert report["prompts"] == sum(bool(r["retrieved_versions"]) for r in steps(out))
    assert report["deletions"] == sum(len(r["retrieved_versions"]) for r in steps(out))
    credited = {e["id"]: e for e in report["rows"]}
    assert shown <= set(credited) and all("@" in i for i in credited)  # NOTE@VERSION, each version apart
    assert all(credited[v]["retrieved"] > 0 for v in shown)
    assert {v["note"] + "@" + str(v["version"]) for v in notes(out)} == set(credited)
    credit_run = out.parent / f"{out.name}__credit-EP_CRIT-test"
    full = [c for c in rundir.read_jsonl(credit_run / "calls.jsonl") if c["strategy"] == "full"]
    assert full and all(c["cached"] for c in full)  # the full prompts are the stream's own requests
    for args in (["--on", "train"], ["--strategy", "EP+SEM_CRIT"]):
        assert main(["credit", str(out), "--strategy", "EP_CRIT", *args]) == 2


def test_refresh_every_keeps_advice_that_learns_with_the_notes(home, fake_llm):
    out = home / "refresh"
    assert main(argv(out, "gold", "--refresh-every", "3")) == 0
    refreshes = rundir.read_jsonl(out / "memory" / "advice.jsonl")
    assert [r["step"] for r in refreshes] == [2, 5]
    written = {v["note"] for v in notes(out) if v["note"].startswith("stream:")}
    for r in refreshes:
        lines = r["pools"]["all"]["lines"]
        assert lines and r["pools"]["all"]["error"] is None
        assert set(r["pools"]["all"]["new_notes"]) <= written
        assert all(line["source_ids"] for line in lines)
    answered = steps(out)
    assert {r["strategy"] for r in answered} == {"EP+SEM_CRIT"}
    calls = {c["request_hash"]: c for c in rundir.read_jsonl(out / "calls.jsonl")}
    assert sum(c["stage"] == "stream_summary" for c in calls.values()) >= 2
    advice = refreshes[0]["pools"]["all"]["lines"][0]["text"]
    later = [calls[r["request_hash"]]["messages"][0]["content"] for r in answered if r["step"] > 2]
    assert later and all(advice in text for text in later[:3])  # steps 3-5 show the first refresh's advice
    fake_llm.CALLS.clear()
    assert main(argv(out, "gold", "--refresh-every", "3")) == 0 and fake_llm.CALLS == []


def test_an_advice_line_whose_sources_are_all_disabled_goes():
    from critique.experiments.stream.advice import Advice

    advice = Advice(run=None, every=1)
    advice.lines = {"all": [{"text": "keep", "source_ids": ["a", "b"]}, {"text": "gone", "source_ids": ["b"]}]}
    assert advice.shown({"b"}) == {"all": {"advice": "- keep"}}
    assert advice.shown({"a", "b"}) == {}


def test_a_failed_feedback_call_stops_the_stream_at_its_step_again_on_a_rerun(home, fake_llm, monkeypatch):
    out = home / "failing"
    monkeypatch.setenv("FAKE_LLM_FAIL", "critique")
    for _ in range(2):  # the rerun meets the same failure: it stops there again, not after it
        assert main(argv(out, "gold", "--start", "empty", "--retries", "0")) == 1
        assert [r["step"] for r in steps(out)] == [0]
    train = home / "train-failing"  # a train-stage critique that failed: no step is answered
    assert main(argv(train, "gold", "--retries", "0")) == 1 and steps(train) == []
    monkeypatch.delenv("FAKE_LLM_FAIL")
    assert main(argv(out, "gold", "--start", "empty")) == 0
    assert [r["step"] for r in steps(out)] == list(range(LIMIT)) and len(written(out)) == LIMIT
