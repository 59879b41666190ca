"""critique.Learner: fit on labeled items, predict on unlabeled questions (fake provider, real encoder)."""

import json
import subprocess
import sys
from collections import Counter

import pytest

from critique.base import rundir

TASK = "Is the statement true?"
SPACE = ["yes", "no"]
TRAIN = [("Water boils at 100 C at sea level.", "yes"), ("The sun orbits the earth.", "no"),
         ("Whales are mammals.", "yes"), ("Spiders have six legs.", "no"),
         ("Gold is a metal.", "yes"), ("Ice is heavier than liquid water.", "no")]
NEW = ["Dolphins are fish.", "Iron rusts in wet air.", "Bats are birds."]
ALL = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]


def learner(out, **options):
    from critique import Learner

    return Learner("fake/model", task=TASK, answer_space=SPACE, out=out, progress=False, k=3, **options)


def sizes(out):
    return {p.name: p.stat().st_size for p in out.iterdir() if p.suffix == ".jsonl"}


def test_import_critique_stays_light():
    code = ("import sys, critique; assert 'litellm' not in sys.modules; "
            "from critique import Learner, Prediction; assert 'litellm' not in sys.modules; print('ok')")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "ok"


def test_fit_runs_the_train_stage_and_a_refit_makes_no_call(home, fake_llm):
    out = home / "run"
    lr = learner(out).fit(TRAIN)
    data = rundir.read_run(out)
    assert Counter(c["stage"] for c in data["calls"]) == {"train_predict": 6, "critique": 6, "summary": 1}
    assert len(fake_llm.CALLS) == 13 and lr.calls_made == 13
    assert len(rundir.read_jsonl(out / "data" / "train.jsonl")) == 6 and (out / "data" / "test.jsonl").read_text() == ""
    manifest = data["manifest"]
    assert manifest["status"] == "complete" and manifest["dataset"]["n_train"] == 6
    assert manifest["dataset"]["n_test"] == 0 and manifest["dataset"]["name"] == "run"
    entries = lr.memory.entries
    assert [(e["question"], e["gold"]) for e in entries] == TRAIN
    assert all(e["initial_answer"] in SPACE and e["critique"]["correct_answer"] for e in entries)
    assert lr.semantic["all"]["source_ids"] == [e["id"] for e in entries] and lr.advice.startswith("- ")

    fake_llm.CALLS.clear()
    before = sizes(out)
    assert learner(out).fit(TRAIN).calls_made == 0  # a new learner on the same folder resumes too
    assert fake_llm.CALLS == [] and sizes(out) == before

    with pytest.raises(ValueError, match="other data"):
        learner(out).fit(TRAIN[:5])
    assert len(rundir.read_jsonl(out / "data" / "train.jsonl")) == 6 and fake_llm.CALLS == []


def test_predict_with_each_strategy_logs_unlabeled_predictions(home, fake_llm):
    out = home / "run"
    lr = learner(out).fit(TRAIN)
    ids = {e["id"] for e in lr.memory.entries}
    fake_llm.CALLS.clear()
    answers = {s: lr.predict(NEW, strategy=s) for s in ALL}
    assert len(fake_llm.CALLS) == 15
    for strategy, preds in answers.items():
        assert [p.question for p in preds] == NEW and all(p.strategy == strategy for p in preds)
        assert all(p.answer in SPACE and not p.parse_failed and p.error is None for p in preds)
        episodic = strategy in ("EP_LABEL", "EP_CRIT", "EP+SEM_CRIT")
        assert all((len(p.retrieved) == 3 and set(p.retrieved) <= ids) if episodic else p.retrieved == []
                   for p in preds)
    data = rundir.read_run(out)
    logged = [p for p in data["predictions"] if p["stage"] == "predict"]
    assert len(logged) == 15 and all(p["gold"] is None and p["correct"] is None for p in logged)
    calls = [c for c in data["calls"] if c["stage"] == "predict"]
    assert Counter(c["strategy"] for c in calls) == {s: 3 for s in ALL}
    ep_sem = [c["messages"][0]["content"] for c in calls if c["strategy"] == "EP+SEM_CRIT"]  # in any order
    assert all(lr.advice in text for text in ep_sem)
    assert sorted(q for q in NEW for text in ep_sem if f"Question:\n{q}\n" in text) == sorted(NEW)
    assert data["manifest"]["status"] == "complete" and data["manifest"]["config"]["strategies"] == []

    fake_llm.CALLS.clear()
    before = sizes(out)
    again = learner(out)  # memory read back from memory/ (FAISS vectors): the very same prompts
    assert again.predict(NEW + NEW[:1], strategy="EP+SEM_CRIT") == answers["EP+SEM_CRIT"] + answers["EP+SEM_CRIT"][:1]
    assert fake_llm.CALLS == [] and again.calls_made == 0 and sizes(out) == before


def test_unparseable_reply_gives_no_answer(home, fake_llm, monkeypatch):
    out = home / "run"
    lr = learner(out).fit(TRAIN)
    reply = fake_llm._reply
    monkeypatch.setattr(fake_llm, "_reply", lambda messages, schema: "I cannot say."
                        if "MUMBLE" in messages[-1]["content"] else reply(messages, schema))
    pred, fine = lr.predict(["MUMBLE: is this true?", NEW[0]], strategy="EP_CRIT")
    assert pred.answer is None and pred.parse_failed and pred.error is None and len(pred.retrieved) == 3
    assert fine.answer in SPACE and not fine.parse_failed
    record = [p for p in rundir.read_jsonl(out / "predictions.jsonl") if p["item_id"] == pred.id][-1]
    assert record["answer"] is None and record["parse_failed"] and record["correct"] is None


def test_predict_before_fit_and_bad_strategy_are_refused(home, fake_llm):
    with pytest.raises(RuntimeError, match="fit"):
        learner(home / "empty").predict(NEW)
    with pytest.raises(ValueError, match="unknown strategy"):
        learner(home / "empty").predict(NEW, strategy="MAGIC")
    assert fake_llm.CALLS == []


def test_load_a_critique_run_directory_and_predict(home, fake_llm, capsys):
    from critique import Learner
    from critique.cli import main

    out = home / "demo"
    argv = ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "3", "--out", str(out),
            "--quiet"]
    assert main(argv) == 0
    ids = {e["id"] for e in rundir.read_jsonl(out / "memory" / "episodic.jsonl")}
    fake_llm.CALLS.clear()
    lr = Learner.load(out, progress=False)
    assert lr.config.model == "fake/model" and lr.config.k == 3 and lr.answer_space == ["1", "2", "3", "4"]
    assert {e["id"] for e in lr.memory.entries} == ids
    question = rundir.read_jsonl(out / "memory" / "episodic.jsonl")[0]["question"] + " (asked again)"
    for strategy in ("EP+SEM_CRIT", "EP_LABEL", "zero_shot"):
        (pred,) = lr.predict([question], strategy=strategy)
        assert pred.answer in lr.answer_space and set(pred.retrieved) <= ids
        assert len(pred.retrieved) == (0 if strategy == "zero_shot" else 3)
    assert len(fake_llm.CALLS) == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["config"]["strategies"] == ALL

    fake_llm.CALLS.clear()
    capsys.readouterr()
    assert main(argv) == 0  # `critique run` still resumes with zero calls and its table is unchanged
    assert fake_llm.CALLS == [] and "| EP+SEM_CRIT |" in capsys.readouterr().out


def test_fit_on_a_dataset_name_takes_its_train_split(home, fake_llm):
    from critique import Learner

    lr = Learner("fake/model", out=home / "mcr", progress=False, limit=4).fit("mcr-gen")
    assert lr.answer_space == ["1", "2", "3", "4"] and len(lr.memory.entries) == 4
    card = json.loads((home / "mcr" / "data" / "dataset.json").read_text())
    assert card["task"] == lr.task and "mcr-gen" in card["source"]
    assert len(fake_llm.CALLS) == 4 + 4 + 1


def test_a_manifest_gives_the_run_config_it_records():
    """critique.base.config.manifest_run_config: what `Learner.load`, verify and credit read back."""
    from critique.base.config import RunConfig, manifest_run_config

    old = {"config": {"dataset": "d", "model": "m", "k": 3, "strategies": ["EP_CRIT"], "gone": 1}}
    config = manifest_run_config(old)  # written before --prompts: the set of that time; unknown keys left out
    assert (config.k, config.strategies, config.prompts, config.seed) == (3, ["EP_CRIT"], "compact", RunConfig.seed)
    assert manifest_run_config({"config": {**old["config"], "prompts": "paper"}}).prompts == "paper"


def test_learn_is_one_online_step_that_writes_the_episode_back(home, fake_llm):
    out = home / "run"
    lr = learner(out).fit(TRAIN)
    first = lr.learn(NEW[0], "no")
    second = lr.learn(NEW[1], "self")
    third = lr.learn(NEW[2], None)
    versions = rundir.read_jsonl(out / "memory" / "notes.jsonl")
    assert sum(v["feedback"] == "train" for v in versions) == len(TRAIN)
    written = [v for v in versions if v["note"].startswith("stream:")]
    assert [(v["feedback"], v["step"]) for v in written] == [("gold", 0), ("self", 1)]
    assert written[0]["entry"]["label"] == "no" and written[1]["entry"]["label"] is None
    assert written[1]["entry"]["verdict"] in ("right", "wrong")
    answers = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "stream"]
    assert [r["step"] for r in answers] == [0, 1, 2] and answers[0]["correct"] == (first.answer == "no")
    assert answers[1]["correct"] is None and answers[2]["correct"] is None
    assert len(answers[2]["retrieved"]) == 3 and {second.answer, third.answer} <= set(SPACE) | {None}
    # the third step could retrieve the notes the first two wrote (its memory holds them)
    assert answers[2]["memory_notes"] == len(TRAIN) + 2
    fake_llm.CALLS.clear()
    assert lr.learn(NEW[0], "no").answer == first.answer and fake_llm.CALLS == []
    with pytest.raises(ValueError, match="feedback must be a label"):
        lr.learn(NEW[0], "maybe")


def test_learning_a_question_again_with_other_feedback_writes_a_new_version(home, fake_llm):
    out = home / "run"
    lr = learner(out).fit(TRAIN)
    lr.learn(NEW[0], "no")
    lr.learn(NEW[0], "yes")
    history = [v for v in rundir.read_jsonl(out / "memory" / "notes.jsonl") if v["note"].startswith("stream:")]
    assert [(v["version"], v["status"], v["entry"]["label"]) for v in history] == [(1, "active", "no"),
                                                                                   (2, "revised", "yes")]


def test_fit_runs_a_field_methods_offline_stage_and_predict_answers_with_its_memory(home, fake_llm):
    out = home / "run"
    lr = learner(out, train_budget=100_000).fit(TRAIN, methods=["dc"])
    offline = [c for c in rundir.read_jsonl(out / "calls.jsonl") if c["strategy"] == "dc"]
    assert {c["stage"] for c in offline} == {"dc_generate", "dc_curate"}
    sheet = json.loads((out / "memory" / "dc.json").read_text(encoding="utf-8"))["pools"]["all"]["notes"]
    predictions = lr.predict(NEW, strategy="dc")
    assert [p.strategy for p in predictions] == ["dc"] * 3 and all(p.answer in SPACE for p in predictions)
    assert all(p.retrieved == [n["id"] for n in sheet] for p in predictions)  # the cheatsheet it learned
    from critique.analysis.memory import audit, audit_methods

    (dc,) = audit.audit([str(out)])["audits"][0]["methods"]  # its unlabeled predict prompts: neither right nor wrong
    assert (dc["method"], dc["prompts"], dc["labeled"], dc["right"]) == ("dc", 3, 0, 0)
    assert audit_methods.stage_table({"methods": [dc]}).rows[0]["right"] == "0 of 0"
    fake_llm.CALLS.clear()
    learner(out, train_budget=100_000).predict(NEW, strategy="dc")  # the offline stage replays from the log
    assert fake_llm.CALLS == []
    with pytest.raises(ValueError, match="offline stage of their own"):
        learner(out).fit(TRAIN, methods=["EP_CRIT"])


def test_audit_reads_a_learners_folder_and_tables_says_why_it_has_no_table(home, fake_llm, capsys, tmp_path):
    from critique.cli import main

    out = home / "run"
    lr = learner(out).fit(TRAIN)
    predictions = lr.predict(NEW, strategy="EP_CRIT")
    report = tmp_path / "audit.json"
    assert main(["audit", str(out), "--format", "json", "-o", str(report)]) == 0
    audit = json.loads(report.read_text(encoding="utf-8"))["audits"][0]
    assert audit["experiment"] == "Learner" and len(audit["entries"]) == len(lr.memory.entries)
    assert audit["summary"]["retrievals"] == sum(len(p.retrieved) for p in predictions) > 0
    capsys.readouterr()
    assert main(["tables", str(out)]) == 2
    err = capsys.readouterr().err
    assert "critique.Learner's folder has no test split" in err and "critique audit reads its memory" in err
    assert str(out) in err


def test_evaluate_scores_each_strategy_on_labeled_items_logged_like_a_test_stage(home, fake_llm):
    from critique.analysis.stats.core import wilson

    out = home / "run"
    lr = learner(out).fit(TRAIN)
    labeled = [(q, "no") for q in NEW[::2]] + [("Iron rusts in wet air.", "yes")]
    fake_llm.CALLS.clear()
    scores = lr.evaluate(labeled, strategies=["zero_shot", "EP_CRIT", "ace"])
    assert list(scores) == ["zero_shot", "EP_CRIT", "ace"]
    tests = [p for p in rundir.read_run(out)["predictions"] if p["stage"] == "test"]
    for name, score in scores.items():
        mine = [p for p in tests if p["strategy"] == name]
        assert len(mine) == score.n == 3 and [p["gold"] for p in score.records] == ["no", "no", "yes"]
        assert score.correct == sum(p["correct"] for p in mine)
        assert score.accuracy == score.correct / 3 and (score.low, score.high) == wilson(score.correct, 3)
        assert {p["item_id"] for p in mine} == {lr.predict(q)[0].id for q, _ in labeled}  # named by the question
    calls = [c for c in rundir.read_run(out)["calls"] if c["stage"] == "test"]
    assert Counter(c["strategy"] for c in calls)["EP_CRIT"] == 3
    fake_llm.CALLS.clear()
    again = lr.evaluate(labeled, strategies=["zero_shot", "EP_CRIT", "ace"])
    assert fake_llm.CALLS == []
    assert {n: s.correct for n, s in again.items()} == {n: s.correct for n, s in scores.items()}
    with pytest.raises(ValueError, match="dc:online learns on the questions it answers"):
        lr.evaluate(labeled, strategies=["dc:online"])


def test_a_note_learned_from_self_feedback_records_its_truth_as_unknown(home, fake_llm, capsys):
    from critique.base import records
    from critique.cli import main

    out = home / "run"
    lr = learner(out).fit(TRAIN)
    lr.learn(NEW[0], "no")
    lr.learn(NEW[1], "self")
    versions = rundir.read_jsonl(out / "memory" / "notes.jsonl")
    labelled, unlabelled = [v for v in versions if v["note"].startswith("stream:")]
    assert unlabelled["feedback"] == "self" and unlabelled["truth"] is None  # no gold label: U is unknown, not 0
    assert unlabelled["entry"]["gold"] is None and unlabelled["entry"]["label"] is None
    assert labelled["entry"]["gold"] == "no" and labelled["truth"] == int(labelled["entry"]["initial_answer"] == "no")
    assert all(v["truth"] in (0, 1) for v in versions if v["feedback"] == "train")
    records.check("memory_entry", unlabelled["entry"])
    records.check("note", unlabelled)
    capsys.readouterr()
    assert main(["memory", "list", str(out)]) == 0
    listed = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    assert listed[unlabelled["note"]][-1] == "-"  # the truth column: unknown


def test_audit_of_a_learner_scores_evaluates_labeled_prompts_and_leaves_predict_out(home, fake_llm, tmp_path, capsys):
    from critique.cli import main

    out = home / "run"
    lr = learner(out).fit(TRAIN)
    predicted = lr.predict(NEW, strategy="EP_CRIT")
    labeled = [(q, "no") for q in NEW[::2]] + [("Iron rusts in wet air.", "yes")]
    scores = lr.evaluate(labeled, strategies=["zero_shot", "EP_CRIT"])
    report = tmp_path / "audit.json"
    assert main(["audit", str(out), "--format", "json", "-o", str(report)]) == 0
    audit = json.loads(report.read_text(encoding="utf-8"))["audits"][0]
    ep, zero = audit["reuse"]["EP_CRIT"], audit["reuse"].get("zero_shot")  # evaluate's zero_shot prompts are read
    assert ep["prompts"] == 6 and ep["accuracy_with_memory"] == scores["EP_CRIT"].accuracy  # over evaluate's 3 only
    assert (ep["labeled"], ep["unlabeled"], ep["accuracy"]) == (3, 3, scores["EP_CRIT"].accuracy)
    assert audit["prompts"]["labeled"] == 6 and audit["prompts"]["unlabeled"] == 3
    assert ep["correct_with_memory"] == scores["EP_CRIT"].correct and ep["accuracy_without_memory"] is None
    assert (zero["labeled"], zero["unlabeled"], zero["accuracy_with_memory"]) == (3, 0, None)
    assert zero["accuracy"] == zero["accuracy_without_memory"] == scores["zero_shot"].accuracy
    # reuse is use, with or without a label: every EP_CRIT prompt counts in n; right only over labeled ones
    evaluated = scores["EP_CRIT"].records
    assert audit["summary"]["retrievals"] == sum(len(p.retrieved) for p in predicted) + sum(
        len(p["retrieved"]) for p in evaluated)
    assert sum(r["labeled"] for r in audit["entries"]) == sum(len(p["retrieved"]) for p in evaluated)
    unlabeled_uses = [u for r in audit["entries"] for u in r["retrieved_by"] if u["item_id"] in
                      {p.id for p in predicted} and u["correct"] is None]
    assert len(unlabeled_uses) == sum(len(p.retrieved) for p in predicted)
    assert audit["failures"]["wrong"] == 3 - scores["EP_CRIT"].correct  # an unlabeled answer is never wrong
    capsys.readouterr()
    assert main(["audit", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3 unlabeled predict prompts" in text and "left out of accuracy" in text
