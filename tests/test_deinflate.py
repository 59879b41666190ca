"""critique deinflate on the fake provider, with a scripted performance agent whose behaviour is known: it answers
a test question right unless its prompt shows an inflated example (a wrong initial answer stored as right) that is
not marked doubtful. So a verifier that copies the stored verdict (flags only entries already stored as wrong)
gains nothing over random demotion, and one equal to the truth fixes every prompt; in doubt mode a prompt
without a demoted entry is the source run's very request."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from critique.base import rundir
from critique.cli import main
from critique.experiments import deinflate

from test_critic_modes import entries, run

LIMIT = 12


def scripted_agent(source: Path):
    """ANSWER for the fake: zero-shot prompts hashed as usual; an EP prompt right unless it shows an inflated
    example without the doubtful mark (verdicts read from the source run's memory)."""
    from critique.datasets.registry import resolve

    data = resolve("mcr-gen").limited(LIMIT)
    gold = {i.question: i.answer for i in [*data.train, *data.test]}
    stored: dict[str, dict] = {}

    def answer(prompt, options, props):
        blocks = re.split(r"\n(?:Example|Past question) \d+:\n", prompt)  # the compact or the paper set
        if len(blocks) == 1:
            return None
        if not stored:
            stored.update({e["question"]: e for e in entries(source)})
        asked = prompt.rsplit("Question:\n", 1)[-1]
        question = next(q for q in gold if asked.startswith(q))
        for block in blocks[1:]:
            e = next(e for q, e in stored.items() if block.startswith(q))
            inflated = e["verdict"] == "right" and e["initial_answer"] != e["gold"]
            if inflated and "[Doubtful" not in block:
                return {"answer": next(o for o in options if o != gold[question])}
        return {"answer": gold[question]}

    return answer


def arm(source: Path, mode: str, tail: str) -> Path:
    return source.parent / f"{source.name}__deinflate-{mode}-{tail}"


def arm_predictions(path: Path) -> dict:
    return {(p["strategy"], p["item_id"]): p for p in rundir.latest(rundir.read_jsonl(path / rundir.PREDICTIONS))
            if p["stage"] == "test"}


def accuracy(path: Path, strategy: str) -> float:
    found = [p["correct"] for (s, _), p in arm_predictions(path).items() if s == strategy]
    return 100.0 * sum(found) / len(found)


def rows(paths, capsys) -> dict:
    from critique.analysis.__main__ import main as analysis_main

    capsys.readouterr()
    assert analysis_main(["tables", *map(str, paths), "--format", "json"]) == 0
    return {(r["verifier"], r["mode"], r["strategy"]): r for r in json.loads(capsys.readouterr().out)["deinflate"]}


def truth_verify_run(judged: Path, to: Path) -> Path:
    """A copy of a verify run whose checks survive exactly when the entry's answer is right: the truth."""
    shutil.copytree(judged, to, ignore=shutil.ignore_patterns(rundir.LOCK))
    records = rundir.read_jsonl(to / rundir.PREDICTIONS)
    for p in records:
        p["survives"] = p["checked_answer"] == p["gold"]
    (to / rundir.PREDICTIONS).write_text("".join(json.dumps(p) + "\n" for p in records))
    return to


def test_the_doubtful_mark_names_no_option():
    from critique.base.assertion import asserted_option

    for prompt_set in ("compact", "paper"):
        for space, text in ((["1", "2", "3", "4"], "The correct answer is 3."), (["A", "B"], "The answer is B."),
                            (["yes", "no", "maybe"], "The correct answer is no.")):
            done = deinflate.marked({"critique": {"correct_answer": text}}, prompt_set)
            assert done["doubtful"] and "Doubtful" in done["critique"]["correct_answer"]
            assert asserted_option(done["critique"]["correct_answer"], space) == asserted_option(text, space)


@pytest.mark.parametrize("text", ["random", "random:0", "seeds:3", "random:x"])
def test_a_bad_control_is_refused(text):
    with pytest.raises(ValueError):
        deinflate.parse_control(text)


def test_deinflation_against_random_with_verifiers_whose_effect_is_known(home, fake_llm, monkeypatch, capsys):
    source = home / "self"
    monkeypatch.setattr(fake_llm, "ANSWER", scripted_agent(source))
    assert run(source, "--critic", "self", "--limit", str(LIMIT), "--strategies", "EP_CRIT,EP+SEM_CRIT") == 0
    memory = entries(source)
    inflated = {e["id"] for e in memory if e["verdict"] == "right" and e["initial_answer"] != e["gold"]}
    stored_wrong = {e["id"] for e in memory if e["verdict"] == "wrong"}
    assert inflated and stored_wrong
    before = {k: p for k, p in arm_predictions(source).items()}
    assert any(set(p["retrieved"]) & inflated for p in before.values())  # some prompt is misled: room to gain
    # a verifier that copies the stored verdict: the self critic's own request, judged again
    assert main(["verify", str(source), "--verifier", "judge:fake/model", "--quiet"]) == 0
    truth = truth_verify_run(home / "self__verify-judge-fake_model", home / "truth")
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert main(["deinflate", str(source), "--verifier", "judge:fake/model", "--control", "random:3", "--mode",
                 "doubt", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"flagged {len(stored_wrong)} of {len(memory)} checked entries" in err
    dollars = err.count("critique: cost: dollars:")  # each arm's calls in dollars
    assert err.count("critique: cost:") - dollars == 5 and dollars == 4  # in all, then each arm before it starts
    copy = arm(source, "doubt", "judge-fake_model")
    demoted = set(json.loads((copy / rundir.MEMORY / "demoted.json").read_text())["ids"])
    assert demoted == stored_wrong
    # a prompt without a demoted entry is the source run's very request; one with it shows the mark
    copied = arm_predictions(copy)
    assert set(copied) == set(before)
    calls = {c["request_hash"]: c for c in rundir.read_jsonl(copy / rundir.CALLS)}
    for key, p in copied.items():
        assert p["retrieved"] == before[key]["retrieved"]  # doubt keeps retrieval as it was
        if set(p["retrieved"]) & demoted:
            assert p["request_hash"] != before[key]["request_hash"]
            assert "[Doubtful" in calls[p["request_hash"]]["messages"][0]["content"]
        else:
            assert p["request_hash"] == before[key]["request_hash"]
    shown = sum(bool(set(p["retrieved"]) & demoted) for p in copied.values())
    assert len(fake_llm.CALLS) <= shown + sum(  # only prompts with a demoted entry were sent (random arms too)
        bool(set(p["retrieved"]) & set(json.loads((arm(source, "doubt", f"random{len(demoted)}-s{s}") / rundir.MEMORY
                                                   / "demoted.json").read_text())["ids"]))
        for s in range(3) for p in arm_predictions(arm(source, "doubt", f"random{len(demoted)}-s{s}")).values())
    # the truth: flags exactly the wrong answers, so every inflated example is marked
    assert main(["deinflate", str(source), "--verifier", "reorder", "--verify-run", str(truth), "--control",
                 "random:3", "--mode", "doubt", "--quiet"]) == 0
    arms = sorted(home.glob("self__deinflate-*"))
    table = rows([source, *arms], capsys)
    for strategy in ("EP_CRIT", "EP+SEM_CRIT"):
        copying = table[("judge:fake/model", "doubt", strategy)]
        assert copying["accuracy"] == pytest.approx(copying["source"])  # it marks no inflated entry
        assert copying["source"] == pytest.approx(accuracy(source, strategy))
        assert copying["random_seeds"] == 3 and copying["vs_random"] <= 1e-9  # gains nothing over random
        knowing = table[("reorder", "doubt", strategy)]
        assert knowing["accuracy"] == pytest.approx(100.0) and knowing["vs_random"] > 0 and knowing["vs_source"] > 0
    # resumed: nothing more to ask
    fake_llm.CALLS.clear()
    assert main(["deinflate", str(source), "--verifier", "judge:fake/model", "--control", "random:3", "--mode",
                 "doubt", "--quiet"]) == 0 and fake_llm.CALLS == []


def test_drop_removes_the_flagged_entries_from_retrieval(home, fake_llm, monkeypatch, capsys):
    source = home / "self"
    monkeypatch.setattr(fake_llm, "ANSWER", scripted_agent(source))
    assert run(source, "--critic", "self", "--limit", str(LIMIT), "--strategies", "EP_CRIT") == 0
    assert main(["verify", str(source), "--verifier", "judge:fake/model", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["deinflate", str(source), "--verifier", "judge:fake/model", "--control", "random:1", "--mode", "drop",
                 "--quiet"]) == 0
    out = arm(source, "drop", "judge-fake_model")
    gone = {e["id"] for e in entries(source) if e["verdict"] == "wrong"}
    kept = {e["id"] for e in entries(out)}
    assert gone and not kept & gone and kept | gone == {e["id"] for e in entries(source)}
    for p in arm_predictions(out).values():
        assert not set(p["retrieved"]) & gone and len(p["retrieved"]) == 3
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["probe"]["mode"] == "drop" and manifest["probe"]["demoted"] == len(gone)
    assert manifest["config"]["strategies"] == ["EP_CRIT"]  # the source made no summary: EP+SEM_CRIT has no advice


def test_deinflate_needs_the_verify_run(home, fake_llm, capsys):
    assert run(home / "src", "--limit", "4") == 0
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert main(["deinflate", str(home / "src"), "--verifier", "reorder", "--quiet"]) == 2
    assert "critique verify" in capsys.readouterr().err and fake_llm.CALLS == []


@pytest.mark.parametrize("dataset", ["mcr-gen", "pref-gen"])
def test_a_verifier_that_flags_every_entry_has_no_control(dataset, capsys):
    """The shipped reorder verifier flags all 250 entries of the self critic's memory: a budget-matched random
    arm demotes those same 250 (answered from the verifier arm's log), so it is no control, and the table says so
    instead of printing its mean with an SD of 0."""
    logs = Path(__file__).resolve().parent.parent / "logs"
    source = logs / f"{dataset}__local_smollm2__critic-self"
    found = rows([source, *sorted(logs.glob(f"{source.name}__deinflate-*"))], capsys)
    assert found and {key[2] for key in found} == {"EP_CRIT", "EP+SEM_CRIT"}
    for row in found.values():
        assert row["demoted"] == 250 and row["accuracy"] is not None
        assert (row["random_mean"], row["random_sd"], row["vs_random"], row["random_seeds"]) == (None, None, None, 0)
        assert row["control"].startswith("none possible: the verifier flagged all 250 entries")
