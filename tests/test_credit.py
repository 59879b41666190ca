"""`critique credit`: the deletion test on a scripted fake model whose answers depend on which memory
entries its prompt shows, so every tier is known in advance (docs/memory.md section 3)."""

import hashlib
import json
import shutil

import pytest

from critique.analysis.memory import credit as analysis
from critique.base import rundir
from critique.base.cost import PREFIX
from critique.cli import main

import statement_dataset

TRAIN = {  # entry -> question; the scripted model reads which of them a prompt shows
    "A": "Apples grow on trees in the orchard and are often red.",  # load-bearing for T1
    "B": "Lemons are sour yellow citrus fruits grown in warm climates.",  # B and B2: duplicates (cosine 0.98)
    "B2": "Lemons are sour yellow citrus fruits grown in a warm climate.",
    "C": "Bananas are long curved fruits with a soft sweet flesh.",  # cited, never decisive
    "D": "Cherries are small round stone fruits, usually dark red.",  # neither cited nor decisive
    "X": "Grapes grow in bunches on vines and are used to make wine.",  # toxic for T2
    "Z": "The Mongolian parliament passed a new tax law in Ulaanbaatar.",  # never retrieved (K = 6 of 7)
}
TEST = {"T1": "Pears are sweet fruits that grow on trees.", "T2": "Plums are juicy stone fruits that grow on trees."}
GOLD = {"T1": "yes", "T2": "no"}
CITED = ("A", "C")


def dataset(folder):
    return statement_dataset.write(folder, "fruit", TRAIN, TEST, GOLD)


def scripted(prompt, options, props):
    """The question asked (after "Question:") decides: T1 is answered right only when entry A is shown, T2
    wrong whenever entry X is shown; on train (leave-one-out prompts, which show examples) C is answered
    wrong whenever X is shown, every other train question right. With --cite, the answer names A and C
    among the examples shown. Any other prompt (zero-shot): the fake's default answer."""
    lines = prompt.splitlines()
    if "Question:" not in lines:
        return None
    asked = lines[lines.index("Question:") + 1]
    shown = [k for _, k in sorted((lines.index(q), k) for k, q in TRAIN.items() if q in lines and q != asked)]
    if asked == TEST["T1"]:
        right, gold = "A" in shown, GOLD["T1"]
    elif asked == TEST["T2"]:
        right, gold = "X" not in shown, GOLD["T2"]
    elif asked in TRAIN.values() and shown:
        right, gold = not (asked == TRAIN["C"] and "X" in shown), "yes"
    else:
        return None
    reply = {"answer": gold if right else next(o for o in options if o != gold)}
    if "used_examples" in props:
        reply["used_examples"] = [shown.index(k) + 1 for k in CITED if k in shown]
    return reply


@pytest.fixture
def source(home, fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    data = dataset(home / "fruit")
    out = home / "runs" / "fruit"
    assert main(["run", "--dataset", str(data), "--model", "fake/m", "--strategies", "EP_CRIT,EP+SEM_CRIT", "--k", "6",
                 "--out", str(out), "--quiet"]) == 0
    fake_llm.CALLS.clear()
    return out


def credit(*args):
    return main(["credit", *map(str, args), "--quiet"])


def said_cost(err: str) -> int:
    """The calls the cost lines on stderr said, in all (exact counts: no "at most")."""
    said = [line.removeprefix(PREFIX) for line in err.splitlines() if line.startswith(PREFIX)]
    assert said and not any(line.startswith("at most") for line in said)
    return sum(int(line.split(" ", 1)[0]) for line in said)


def test_every_tier_is_found_and_the_cost_is_the_calls_made(source, fake_llm, capsys):
    assert credit(source, "--strategy", "EP_CRIT", "--null", "2") == 0
    captured = capsys.readouterr()
    printed = captured.out
    # 2 prompts x 6 retrieved entries, plus 2 null repeats; the full prompts come from the source run's log
    assert said_cost(captured.err) == 14 == len(fake_llm.CALLS)
    assert "14 calls requested (14 sent to the model" in printed
    out = source.parent / "fruit__credit-EP_CRIT-test"
    data = rundir.read_run(out)
    assert data["manifest"]["probe"]["name"] == "credit" and data["manifest"]["probe"]["source"] == "fruit"
    full = [p for p in data["predictions"] if p["strategy"] == "full"]
    # the rebuilt full prompts are the source run's very requests (answered from its log, not paid again)
    source_hashes = {p["request_hash"] for p in rundir.read_jsonl(source / "predictions.jsonl")
                     if p["stage"] == "test" and p["strategy"] == "EP_CRIT"}
    assert {p["request_hash"] for p in full} == source_hashes
    assert all(c["cached"] for c in data["calls"] if c["strategy"] == "full")
    removed = {p["removed"] for p in data["predictions"] if p["strategy"].startswith("without:")}
    assert removed == {"A", "B", "B2", "C", "D", "X"}  # Z never retrieved: no call
    s = analysis.summary(out)
    tiers = {r["id"]: r["tier"] for r in s["rows"]}
    assert tiers == {"A": "load-bearing", "X": "toxic", "B": "duplicate", "B2": "duplicate",
                     "C": "novel-not-decisive", "D": "novel-not-decisive", "Z": "inert"}
    z = next(r for r in s["rows"] if r["id"] == "Z")
    assert z["credit"] == 0 and z["retrieved"] == 0
    assert s["null"] == {"asked": 2, "flipped": 0, "rate": 0.0, "expected_flips": 0.0}
    assert "Null control: 0 of 2 identical prompts changed correctness" in printed
    # a rerun makes no call and says so before starting
    fake_llm.CALLS.clear()
    assert credit(source, "--strategy", "EP_CRIT", "--null", "2") == 0
    assert said_cost(capsys.readouterr().err) == 0 == len(fake_llm.CALLS)
    # the report alone: no call, the same tiers in JSON
    assert credit(source, "--null", "2", "--report", "--format", "json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tiers"]["load-bearing"] == 1 and report["tiers"]["inert"] == 1 and not fake_llm.CALLS


def test_cite_precision_and_recall(source, fake_llm, capsys):
    assert credit(source, "--cite") == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert said_cost(captured.err) == 14 == len(fake_llm.CALLS)  # 2 full prompts (new: they ask for citations) + 12
    s = analysis.summary(source.parent / "fruit__credit-EP_CRIT-test-cite")
    tiers = {r["id"]: r["tier"] for r in s["rows"]}
    assert tiers["C"] == "used-not-decisive" and tiers["D"] == "novel-unused" and tiers["A"] == "load-bearing"
    # cited pairs: A and C in both prompts (4); flips: A in T1, X in T2; both: A in T1
    # load-bearing (D = 1) among the cited: A in T1 only
    assert s["citation"] == {"pairs": 12, "cited": 4, "flipped": 2, "precision": 0.25, "recall": 0.5,
                             "precision_load_bearing": 0.25}
    assert "Null control: not run" in printed


def test_on_train_is_leave_one_out_and_never_reads_test_predictions(source, fake_llm, capsys, tmp_path):
    blind = tmp_path / "blind" / "fruit"
    shutil.copytree(source, blind)
    (blind / "predictions.jsonl").unlink()  # nothing of the test stage can be read
    assert credit(blind, "--on", "train") == 0
    captured = capsys.readouterr()
    out = blind.parent / "fruit__credit-EP_CRIT-train"
    predictions = rundir.read_jsonl(out / "predictions.jsonl")
    assert {p["item_id"] for p in predictions} == set(TRAIN)
    for p in predictions:
        assert p["item_id"] not in p["retrieved"] and len(p["retrieved"]) == (6 if p["strategy"] == "full" else 5)
    assert said_cost(captured.err) == 7 * 7 == len(fake_llm.CALLS)  # 7 leave-one-out prompts, 6 deletions each


def test_test_half_credits_one_half(source, fake_llm, capsys):
    from critique.experiments.credit.deletion import half_of

    assert credit(source, "--on", "test-half") == 0
    out = source.parent / "fruit__credit-EP_CRIT-test-half"
    items = {p["item_id"] for p in rundir.read_jsonl(out / "predictions.jsonl")}
    assert items == {k for k in TEST if half_of(None, k, 0) == 0}
    # the halves of runs on disk: the first bit of the hash of (seed, user, item id)
    assert all(half_of(u, k, s) == hashlib.sha256(f"{s}\0{u or ''}\0{k}".encode()).digest()[0] & 1
               for u in (None, "u1") for k in TEST for s in (0, 7))
    assert said_cost(capsys.readouterr().err) == len(fake_llm.CALLS) == 6 * len(items)


def test_pruning_with_no_held_out_question_is_refused(home, fake_llm, monkeypatch, capsys):
    from critique.experiments.credit.deletion import half_of

    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    out = home / "runs" / "fruit"
    assert main(["run", "--dataset", str(dataset(home / "fruit")), "--model", "fake/m", "--strategies", "EP_CRIT",
                 "--k", "6", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    assert all(half_of(None, k, 1) == 0 for k in TEST)  # seed 1: every test question is in the credit's half
    fake_llm.CALLS.clear()
    assert credit(out, "--on", "test-half", "--prune", "lowest:1") == 2
    assert "no held-out question to score the pruned memories on (on test-half: 2 test questions" in \
        capsys.readouterr().err
    assert fake_llm.CALLS == [] and not (out.parent / f"{out.name}__credit-EP_CRIT-test-half").exists()  # up front


def test_pruning_the_toxic_entry_against_random_removals(source, fake_llm, capsys):
    assert credit(source, "--on", "train", "--prune", "toxic,lowest:1", "--seeds", "3") == 0
    captured = capsys.readouterr()
    printed = captured.out
    out = source.parent / "fruit__credit-EP_CRIT-train"
    tiers = {r["id"]: r["tier"] for r in analysis.summary(out)["rows"]}
    assert tiers["X"] == "toxic" and [k for k, t in tiers.items() if t in ("toxic", "load-bearing")] == ["X"]
    rows = {(r["rule"], r["strategy"]): r for r in analysis.prune_rows(source.parent / f"{out.name}__prune")}
    for strategy in ("EP_CRIT", "EP+SEM_CRIT"):  # held out: the 2 test questions
        assert rows[("none", strategy)]["accuracy"] == 0.5 and rows[("none", strategy)]["removed"] == 0
        assert rows[("toxic", strategy)]["accuracy"] == 1.0 and rows[("toxic", strategy)]["removed"] == 1
        assert rows[("lowest:1", strategy)]["accuracy"] == 1.0  # X has the lowest credit
        assert rows[("random:1", strategy)]["seeds"] == 3 and rows[("random:1", strategy)]["removed"] == 1
    assert captured.err.count(PREFIX) == 2  # the credit test's, then the pruned memories'
    assert said_cost(captured.err) == len(fake_llm.CALLS)
    assert "| toxic | 1 | 1 | 2 | 100.0 | 100.0 |" in printed
    assert credit(source, "--on", "test", "--prune", "toxic") == 2  # selection on the test set: refused


def test_critique_tables_shows_the_credit_and_pruning_tables_as_the_credit_report_does(source, fake_llm, capsys):
    assert credit(source, "--on", "train", "--prune", "toxic", "--seeds", "2", "--null", "1") == 0
    capsys.readouterr()
    calls = len(fake_llm.CALLS)
    assert main(["tables", str(source.parent), "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert len(fake_llm.CALLS) == calls  # the tables call nothing
    out = source.parent / "fruit__credit-EP_CRIT-train"
    s = analysis.summary(out)
    [row] = tables["credit"]
    assert row["on"] == "train" and row["prompts"] == s["prompts"] and row["deletions"] == s["deletions"]
    assert {t: row[t] for t in s["tiers"]} == s["tiers"] and row["toxic"] == 1 and row["null_asked"] == 1
    pruned = {(r["rule"], r["strategy"]): r for r in tables["credit_prune"]}
    for r in analysis.prune_rows(source.parent / f"{out.name}__prune"):
        shown = pruned[(r["rule"], r["strategy"])]
        assert shown["accuracy"] == 100 * r["accuracy"] and shown["removed"] == r["removed"]
        assert shown["seeds"] == r["seeds"] and shown["n"] == r["n"]
    assert pruned[("toxic", "EP_CRIT")]["accuracy"] == 100.0 and pruned[("random:1", "EP_CRIT")]["seeds"] == 2
    assert main(["tables", str(source.parent)]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines()
                  if line.startswith("| model | dataset | critic | strategy | on"))
    assert "| toxic |" in header and "used-not-decisive" not in header  # no --cite: a tier that cannot occur
    assert "no learned credit (fewer than 4 shown entries to fit or to judge)" in printed  # 7 entries: said, not fit


def test_a_strategy_the_run_did_not_test_is_refused_before_any_call(home, fake_llm, capsys):
    data = dataset(home / "fruit")
    out = home / "runs" / "fruit"
    assert main(["run", "--dataset", str(data), "--model", "fake/m", "--strategies", "EP_CRIT", "--k", "6",
                 "--out", str(out), "--quiet"]) == 0
    fake_llm.CALLS.clear()
    assert credit(out, "--strategy", "EP+SEM_CRIT") == 2
    assert "no EP+SEM_CRIT test predictions" in capsys.readouterr().err and not fake_llm.CALLS
    assert credit(out, "--concurrency", "0") == 2
    assert "--concurrency must be at least 1, not 0" in capsys.readouterr().err and not fake_llm.CALLS
    assert credit(out, "--strategy", "zero_shot") == 2  # no memory in its prompts
    assert "--strategy: one of EP_CRIT, EP+SEM_CRIT" in capsys.readouterr().err and not fake_llm.CALLS
    assert credit(out, "--null", "-1") == 2
    assert "--null: must be at least 0, not -1" in capsys.readouterr().err and not fake_llm.CALLS
    assert credit(out, "--strategy", "ace") == 2  # a field method the run did not run
    assert "no ace test predictions" in capsys.readouterr().err and not fake_llm.CALLS


def test_a_killed_credit_run_resumes_without_paying_twice(source, fake_llm, capsys):
    assert credit(source) == 0
    out = source.parent / "fruit__credit-EP_CRIT-test"
    first = analysis.summary(out)
    calls, predictions = (out / "calls.jsonl").read_text().splitlines(), (out / "predictions.jsonl").read_text()
    kept = [c for c in calls if json.loads(c)["strategy"] == "full"] + calls[2:7]  # as if killed after 5 calls...
    (out / "calls.jsonl").write_text("\n".join(dict.fromkeys(kept)) + "\n" + calls[7][:40])  # ...mid-write
    lines = predictions.splitlines()
    (out / "predictions.jsonl").write_text("\n".join(lines[:4]) + "\n")
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert credit(source) == 0
    # the 12 deletions less the 5 calls still logged are requested again, nothing else; the response cache
    # (written by the first run) answers them: the model is not asked at all
    captured = capsys.readouterr()
    assert said_cost(captured.err) == 7
    assert "7 calls requested (0 sent to the model, 7 not sent to the model)" in captured.out
    assert not fake_llm.CALLS
    again = analysis.summary(out)
    assert [r["tier"] for r in again["rows"]] == [r["tier"] for r in first["rows"]]
    assert len(again["pairs"]) == 12


def test_the_cite_schema_and_its_parser():
    from critique.datasets.splits import answer_schema
    from critique.engine import parsing

    schema = parsing.cite_schema(answer_schema(["yes", "no"]), 3)
    assert schema["required"] == ["answer", "used_examples"] and schema["properties"]["answer"]["enum"] == ["yes", "no"]
    assert parsing.parse_cited('{"answer": "yes", "used_examples": [2, 1, 2]}', 3) == [2, 1]
    assert parsing.parse_cited('{"answer": "yes", "used_examples": []}', 3) == []
    for bad in ('{"answer": "yes"}', '{"used_examples": [4]}', '{"used_examples": [true]}', "no json", None):
        assert parsing.parse_cited(bad, 3) is None


def test_the_null_control_counts_changes_of_correctness_and_leaves_out_errors():
    def p(strategy, item, answer, correct, error=None):
        return {"strategy": strategy, "item_id": item, "user": None, "answer": answer, "correct": correct,
                "error": error}

    predictions = [p("full", "a", "yes", True), p("null", "a", "Yes.", True),  # another answer, still right
                   p("full", "b", "yes", True), p("null", "b", "no", False),  # correctness changed: a flip
                   p("full", "c", None, False, "timeout"), p("null", "c", "yes", True)]  # full failed: left out
    assert analysis.null_control(predictions) == {"asked": 2, "flipped": 1, "rate": 0.5}


def test_an_entry_whose_deletion_failed_is_not_inert():
    full = [{"strategy": "full", "item_id": "T1", "retrieved": ["A", "B"]}]
    rows = [{"entry": "B", "D": 0, "answer_changed": False, "cited": None, "nearest_other": 0.1}]  # A's call failed
    tiers = {r["id"]: (r["tier"], r["retrieved"]) for r in analysis.entry_rows([{"id": "A"}, {"id": "B"}, {"id": "Z"}],
                                                                              rows, False, full)}
    assert tiers == {"A": ("novel-not-decisive", 1), "B": ("novel-not-decisive", 1), "Z": ("inert", 0)}


@pytest.mark.parametrize("setting", [{"gate": 0.5}, {"inject_budget": 100}, {"retrieval": "contrast"}])
def test_a_source_run_that_did_not_retrieve_the_k_nearest_is_refused_before_any_call(source, fake_llm, capsys,
                                                                                     tmp_path, setting):
    copy = tmp_path / "copy" / "fruit"
    shutil.copytree(source, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["config"].update(setting)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    name = next(iter(setting))
    assert credit(copy) == 2
    assert f"--{name.replace('_', '-')} " in capsys.readouterr().err and not fake_llm.CALLS
    assert credit(copy, "--on", "train", "--prune", "toxic") == 2
    assert f"--{name.replace('_', '-')} " in capsys.readouterr().err and not fake_llm.CALLS


def test_a_test_prompt_that_retrieved_nothing_is_skipped_and_counted(source, fake_llm, capsys, tmp_path):
    copy = tmp_path / "copy" / "fruit"
    shutil.copytree(source, copy)
    lines = [json.loads(x) for x in (copy / "predictions.jsonl").read_text().splitlines()]
    for p in lines:
        if p["stage"] == "test" and p["strategy"] == "EP_CRIT" and p["item_id"] == "T2":
            p["retrieved"] = []
    (copy / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in lines))
    assert credit(copy) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "1 prompts retrieved no entry (nothing to delete)" in printed
    assert "credit EP_CRIT on test: 1 prompts, 6 deletions" in printed and said_cost(captured.err) == 6


def test_a_stream_has_no_test_stage_to_tell_its_held_out_questions_from():
    """A stream's steps are not test predictions: the check up front cannot tell, and leaves it to the pruning."""
    from critique.experiments.credit.prune import no_held_out
    from shipped import MEMORY

    stream = MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__stream-gold"
    assert not [p for p in rundir.read_jsonl(stream / rundir.PREDICTIONS) if p["stage"] == "test"]
    assert no_held_out(stream, "test-half") is None
