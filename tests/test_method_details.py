"""Issue 13.4, the method's details: the strict assertion check, --on-mismatch, EP_LABEL without the
critic, Table 7's full row as an independent trial, reasoning effort and dropped parameters, and
the suggestibility probe's delivery check. On the fake provider (tests/fake_llm.py)."""

import json
from collections import Counter

import pytest

from critique.base import rundir
from critique.base.assertion import asserted_option
from critique.cli import main
from critique.engine import parsing

DIGITS = ["1", "2", "3", "4"]
YES_NO = ["yes", "no"]
AB = ["A", "B"]


def run(out, *extra, limit=6, k=3, model="fake/model"):
    return main(["run", "--dataset", "mcr-gen", "--model", model, "--limit", str(limit), "--k", str(k),
                 "--out", str(out), "--quiet", *extra])


def entries(out, name="episodic.jsonl"):
    path = out / rundir.MEMORY / name
    return rundir.read_jsonl(path) if path.exists() else []


# ---- the strict assertion check ----------------------------------------------------------------
@pytest.mark.parametrize("text, space, expected", [
    ("The correct answer is 3, not 2.", DIGITS, "3"),
    ("3", DIGITS, "3"),
    ("3, not 2", DIGITS, "3"),
    ("Option 2 is correct", DIGITS, "2"),
    ("2. quince, file, Quito", DIGITS, "2"),
    ("The student answered 3, but the correct answer is 1.", DIGITS, "1"),
    ("The correct answer is 2; the answer 3 was wrong.", DIGITS, "2"),
    ("No.", YES_NO, "no"),
    ("NO!", YES_NO, "no"),
    ("Yes, the study shows that the drug lowers blood pressure.", YES_NO, "yes"),
    ("The correct answer is: yes.", YES_NO, "yes"),
    ("No, the correct answer is yes.", YES_NO, "yes"),  # a stated answer outranks a leading word
    ("(B)", AB, "B"),
    ("Answer: B", AB, "B"),
    ("A. The user watched it twice.", AB, "A"),
    # no option named as the answer: a mismatch whatever the gold
    ("There are 3 conditions and the first one decides.", DIGITS, None),  # a stray digit
    ("There is no evidence for the effect.", YES_NO, None),  # a stray "no"
    ("the answer is a comedy", AB, None),  # a stray article: "a" is not option A
    ("A comedy the user would like", AB, None),
    ("The student's answer was right.", DIGITS, None),
    ("The correct answer is 3 or 4", DIGITS, None),
    ("The correct answer is not 2", DIGITS, None),
    ("The answer is 30", DIGITS, None),
    ("1, 2, 3 and 4 are the candidates.", DIGITS, None),
    ("2.5 hours is the limit", DIGITS, None),
    ("The Winter Kingdom (1966; drama) is the correct answer", AB, None),
    ("", DIGITS, None),
    (None, DIGITS, None),
])
def test_the_assertion_check_is_strict(text, space, expected):
    assert asserted_option(text, space) == expected
    assert parsing.asserted_option is asserted_option  # one definition, for the run and the analysis
    for gold in space:
        assert parsing.assertion_mismatch({"correct_answer": text}, gold, space) == (expected != gold)


# ---- EP_LABEL does not depend on the critic -----------------------------------------------------
def test_ep_label_shows_the_label_of_an_item_whose_critique_failed(home, fake_llm, monkeypatch):
    strategies = ["--strategies", "zero_shot,EP_LABEL,EP_CRIT", "--no-cache"]
    assert run(home / "ok", *strategies) == 0
    monkeypatch.setenv("FAKE_LLM_FAIL", "critique")
    run(home / "failed", *strategies, "--retries", "0")  # a refused call is retried otherwise (with backoff)
    assert entries(home / "failed") == [] and len(entries(home / "ok")) == 6  # no critique at all
    gold = {e["item_id"]: e["gold"] for e in entries(home / "ok")}

    def ep_label(out):
        return {c["request_hash"]: c for c in rundir.read_jsonl(out / rundir.CALLS)
                if c["stage"] == "test" and c["strategy"] == "EP_LABEL"}

    failed = ep_label(home / "failed")
    assert set(failed) == set(ep_label(home / "ok")) and len(failed) == 6  # the very same requests
    for p in rundir.read_jsonl(home / "failed" / rundir.PREDICTIONS):
        if p["strategy"] == "EP_LABEL":
            assert len(p["retrieved"]) == 3 and p["error"] is None
            text = failed[p["request_hash"]]["messages"][0]["content"]
            assert all(f"Correct answer: {gold[i]}" in text for i in p["retrieved"])  # each label shown
        if p["strategy"] == "EP_CRIT":
            assert p["retrieved"] == []  # the critique strategies have no memory to show


# ---- --on-mismatch ------------------------------------------------------------------------------
def test_on_mismatch_keep_flags_and_keeps(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "2,3")
    assert run(home / "r", "--strategies", "EP_CRIT") == 0
    kept = entries(home / "r")
    assert len(kept) == 6 and not (home / "r" / rundir.MEMORY / "dropped.jsonl").exists()
    for e in kept:
        wrong = e["gold"] in ("2", "3")
        assert e["assertion_mismatch"] == wrong and e["asserted"] == ("1" if wrong else e["gold"])
    assert rundir.read_run(home / "r")["manifest"]["config"]["on_mismatch"] == "keep"


def test_on_mismatch_drop_leaves_them_out_of_memory_but_not_out_of_ep_label(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "2,3")
    assert run(home / "r", "--on-mismatch", "drop", "--strategies", "EP_LABEL,EP_CRIT", "--k", "5") == 0
    kept, dropped = entries(home / "r"), entries(home / "r", "dropped.jsonl")
    assert dropped and all(e["assertion_mismatch"] and e["gold"] in ("2", "3") for e in dropped)
    assert kept and not any(e["assertion_mismatch"] for e in kept) and len(kept) + len(dropped) == 6
    assert f"{len(dropped)} of 6 critiques left out of memory" in capsys.readouterr().err
    out = {e["id"] for e in dropped}
    predictions = [p for p in rundir.read_jsonl(home / "r" / rundir.PREDICTIONS) if p["stage"] == "test"]
    assert not any(set(p["retrieved"]) & out for p in predictions if p["strategy"] == "EP_CRIT")
    assert any(set(p["retrieved"]) & out for p in predictions if p["strategy"] == "EP_LABEL")
    assert rundir.read_run(home / "r")["manifest"]["config"]["on_mismatch"] == "drop"


def test_on_mismatch_recritique_asks_once_more_and_logs_both(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "2,3")
    monkeypatch.setenv("FAKE_LLM_RECRITIC_WRONG", "3")  # asked again, gold 3 still asserts another label
    assert run(home / "r", "--on-mismatch", "recritique", "--strategies", "EP_CRIT") == 0
    calls = rundir.read_jsonl(home / "r" / rundir.CALLS)
    stages = Counter(c["stage"] for c in calls)
    memory = {e["item_id"]: e for e in entries(home / "r")}
    asked = [e for e in memory.values() if e["gold"] in ("2", "3")]
    assert asked and stages["critique"] == 6 and stages["recritique"] == len(asked)
    for c in calls:
        if c["stage"] == "recritique":
            assert c["template"] == "critic_retry.j2"
            assert [m["role"] for m in c["messages"]] == ["user", "assistant", "user"]
    first_hashes = {c["item_id"]: c["request_hash"] for c in calls if c["stage"] == "critique"}
    second_hashes = {c["item_id"]: c["request_hash"] for c in calls if c["stage"] == "recritique"}
    for e in asked:
        both = e["recritique"]
        assert both["first"]["assertion_mismatch"] and both["first"]["request_hash"] == first_hashes[e["item_id"]]
        assert both["second"]["request_hash"] == second_hashes[e["item_id"]] != first_hashes[e["item_id"]]
        if e["gold"] == "2":  # the second critique names the gold: it is kept
            assert both["kept"] == "second" and not e["assertion_mismatch"] and e["asserted"] == "2"
            assert e["request_hash"] == both["second"]["request_hash"] and e["critique"] == both["second"]["critique"]
        else:  # still wrong: the first is kept, flagged
            assert both["kept"] == "first" and e["assertion_mismatch"]
            assert e["request_hash"] == first_hashes[e["item_id"]]
    assert all("recritique" not in e for e in memory.values() if e["gold"] not in ("2", "3"))
    fake_llm.CALLS.clear()
    assert run(home / "r", "--on-mismatch", "recritique", "--strategies", "EP_CRIT") == 0
    assert fake_llm.CALLS == []  # resumed from the log, both critique calls included


def test_on_mismatch_is_part_of_the_run_and_older_manifests_resume_as_keep(home, fake_llm, capsys):
    out = home / "r"
    assert run(out, "--strategies", "zero_shot") == 0
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    del manifest["config"]["on_mismatch"]  # as a manifest written before the option existed
    rundir.write_json_atomic(out / rundir.MANIFEST, manifest)
    fake_llm.CALLS.clear()
    assert run(out, "--strategies", "zero_shot") == 0 and fake_llm.CALLS == []
    assert run(out, "--strategies", "zero_shot", "--on-mismatch", "drop") == 2
    assert "on_mismatch='keep', not 'drop'" in capsys.readouterr().err


# ---- Table 7's full row is an independent trial -------------------------------------------------
def test_the_parts_ablations_full_run_makes_its_test_calls_again(home, fake_llm):
    plain = home / "runs" / "mcr-gen__fake_model"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--strategies",
                 "zero_shot,EP_CRIT", "--out", str(plain), "--quiet"]) == 0  # the response cache is on
    fake_llm.CALLS.clear()
    argv = ["ablate", "parts", "--values", "full", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6",
            "--out", str(home / "runs"), "--quiet"]
    assert main(argv) == 0
    assert len(fake_llm.CALLS) == 6  # its test calls, though the plain run and the cache hold the same requests
    full = rundir.read_run(home / "runs" / "mcr-gen__fake_model__parts-full")
    plain_ep_crit = {c["request_hash"] for c in rundir.read_jsonl(plain / rundir.CALLS) if c["strategy"] == "EP_CRIT"}
    tests = [c for c in full["calls"] if c["stage"] == "test"]
    assert {c["request_hash"] for c in tests} == plain_ep_crit and not any(c["cached"] for c in tests)
    assert all(c["cached"] for c in full["calls"] if c["stage"] != "test")  # the train stage is reused
    fake_llm.CALLS.clear()
    assert main(argv) == 0 and fake_llm.CALLS == []  # resumed: its own log answers


# ---- reasoning effort and dropped parameters ------------------------------------------------------
@pytest.fixture
def reasoner(monkeypatch):
    """fake/reasoner: a model litellm's model information says reasons."""
    import litellm

    monkeypatch.setitem(litellm.model_cost, "fake/reasoner", {"litellm_provider": "fake", "mode": "chat",
                                                              "supports_reasoning": True})
    return "fake/reasoner"


def test_reasoning_models_get_medium_unless_told_otherwise(home, fake_llm, reasoner):
    from critique.base.config import RunConfig
    from critique.llm.client import llm_config
    from critique.llm.params import is_reasoning_model

    assert is_reasoning_model(reasoner) and not is_reasoning_model("fake/model")
    assert not is_reasoning_model("local/smollm2")
    assert llm_config(RunConfig("d", reasoner)).reasoning_effort == "medium"
    assert llm_config(RunConfig("d", reasoner, reasoning_effort="high")).reasoning_effort == "high"
    assert llm_config(RunConfig("d", reasoner, reasoning_effort="none")).reasoning_effort is None
    assert llm_config(RunConfig("d", "fake/model")).reasoning_effort is None
    sent = {}
    for model, given, recorded in ((reasoner, [], "medium"), (reasoner, ["--reasoning-effort", "none"], "none"),
                                   ("fake/model", [], None)):
        out = home / f"{model.replace('/', '_')}-{recorded}"
        assert run(out, "--strategies", "zero_shot", *given, model=model, limit=2) == 0
        assert rundir.read_run(out)["manifest"]["config"]["reasoning_effort"] == recorded
        sent[recorded] = {c["request_hash"] for c in rundir.read_jsonl(out / rundir.CALLS)}
    assert not sent["medium"] & sent["none"]  # the effort is part of every request


def test_dropped_parameters_are_listed_never_silent(home, fake_llm, reasoner, capsys):
    from critique.llm.params import dropped_by_litellm

    assert run(home / "plain", "--strategies", "zero_shot", limit=2) == 0
    assert rundir.read_run(home / "plain")["manifest"]["dropped_params"] == {"fake/model": []}
    assert "litellm drops" not in capsys.readouterr().err
    # litellm drops reasoning_effort for a custom provider: the run says so and the manifest lists it
    assert run(home / "reasoner", "--strategies", "zero_shot", model=reasoner, limit=2) == 0
    assert rundir.read_run(home / "reasoner")["manifest"]["dropped_params"] == {reasoner: ["reasoning_effort"]}
    assert "litellm drops reasoning_effort for fake/reasoner" in capsys.readouterr().err
    # what litellm's own parameter mapping drops for hosted models (no call is made)
    sent = {"temperature": 0.0, "max_tokens": 100, "seed": 0, "reasoning_effort": "medium"}
    assert dropped_by_litellm("anthropic/claude-3-5-sonnet-20241022", sent) == ["seed", "reasoning_effort"]
    assert dropped_by_litellm("openai/o3-mini", sent) == ["temperature"]  # o-series: temperature 0 is not sent
    assert dropped_by_litellm("openai/gpt-4o-mini", sent) == ["reasoning_effort"]
    assert dropped_by_litellm("openai/o3-mini", {**sent, "temperature": 1.0}) == []


# ---- the suggestibility probe checks what it delivered --------------------------------------------
def test_the_probe_flags_critiques_that_did_not_argue_their_label(home, fake_llm, monkeypatch, capsys):
    from critique.experiments import probes

    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "2,3,4")  # every critique asserts 1, whatever it was told
    out = home / "probe"
    assert main(["probe", "suggestibility", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6",
                 "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    final = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "probe"]
    assert len(final) == 12
    for p in final:
        assert p["critique_asserted"] == "1" and p["delivered"] == (p["argued"] == "1")
    lying_truth = [p for p in final if p["strategy"] == "lying" and p["critique_asserted"] == p["gold"]]
    truth_lies = [p for p in final if p["strategy"] == "truth" and p["critique_asserted"] != p["gold"]]
    assert all(not p["delivered"] for p in lying_truth + truth_lies) and (lying_truth or truth_lies)
    s = probes.suggestibility_summary(final)
    for condition in ("truth", "lying"):
        mine = [p for p in final if p["strategy"] == condition]
        delivered = [p for p in mine if p["delivered"]]
        assert s[f"delivered_{condition}"] == pytest.approx(100.0 * len(delivered) / len(mine))
        expected = 100.0 * sum(p["correct"] for p in delivered) / len(delivered) if delivered else None
        assert s[f"acc_{condition}_delivered"] == (pytest.approx(expected) if delivered else None)
    assert "delivered truth %" in printed and "S (delivered)" in printed
