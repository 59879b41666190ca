"""critique verify --verifier sample:N | judge:MODEL on the fake provider, with scripted answers whose outcome is
known: sampled answers that disagree are flagged, every sample is its own seeded request that no cache answers, a
judge sees no label, and a judge that is the self critic itself copies the stored verdict (Corr(nu, b) = 1)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from critique.base import rundir
from critique.cli import main
from critique.experiments import verify

from test_critic_modes import calls, entries, run


def eia(out, capsys) -> dict:
    from critique.analysis.__main__ import main as analysis_main

    capsys.readouterr()
    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["eia"]
    return row


@pytest.mark.parametrize("text, written", [("reorder", "reorder"), ("sample:5", "sample:5"), (" sample:03", "sample:3"),
                                           ("judge:openai/gpt-4o", "judge:openai/gpt-4o")])
def test_verifiers_have_one_written_form(text, written):
    assert verify.parse_verifier(text) == written


@pytest.mark.parametrize("text", ["sample", "sample:1", "sample:x", "judge:", "judge", "vote:3", "reorder:2"])
def test_bad_verifiers_are_refused_before_any_call(home, fake_llm, capsys, text):
    assert main(["verify", str(home / "src"), "--verifier", text, "--quiet"]) == 2
    assert "--verifier must be" in capsys.readouterr().err and fake_llm.CALLS == []


def test_sample_flags_disagreement_with_seeded_uncached_samples(home, fake_llm, monkeypatch, capsys):
    source = home / "src"
    assert run(source) == 0
    stored = {e["question"]: e for e in entries(source)}
    steady = sorted(stored)[::2]  # these questions always get their stored answer again; the others only once
    seen: Counter = Counter()

    def scripted(prompt, options, props):
        question = next(q for q in stored if q in prompt)
        seen[question] += 1
        again = stored[question]["initial_answer"]
        if question in steady or seen[question] == 1:
            return {"answer": again}
        return {"answer": next(o for o in options if o != again)}

    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    fake_llm.CALLS.clear()
    capsys.readouterr()
    assert main(["verify", str(source), "--verifier", "sample:3", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "at most 18 calls" in err and "temperature 0.7" in err and "never from the response cache" in err
    assert len(fake_llm.CALLS) == 18
    # each prompt is sent three times, with seeds 1, 2, 3 (the run's seed 0 + i), at temperature 0.7
    per_prompt: dict = {}
    for c in fake_llm.CALLS:
        per_prompt.setdefault(c["messages"][0]["content"], []).append(c["seed"])
        assert c["temperature"] == 0.7
    assert len(per_prompt) == 6 and all(sorted(s) == [1, 2, 3] for s in per_prompt.values())
    out = home / "src__verify-sample-3"
    checks = {p["item_id"]: p for p in rundir.read_jsonl(out / rundir.PREDICTIONS)}
    assert len(checks) == 6
    for e in entries(source):
        p = checks[e["item_id"]]
        assert p["strategy"] == "sample:3" and p["verifier"] == "sample:3" and len(p["samples"]) == 3
        assert p["survives"] == (e["question"] in steady), e["item_id"]
        assert p["checked_answer"] == e["initial_answer"]
    assert Counter(c["strategy"] for c in calls(out, "probe")) == {"sample-1": 6, "sample-2": 6, "sample-3": 6}
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["config"]["temperature"] == 0.7 and manifest["probe"]["verifier"] == "sample:3"
    # resumed: its own log answers; another run directory: the response cache does not
    fake_llm.CALLS.clear()
    assert main(["verify", str(source), "--verifier", "sample:3", "--quiet"]) == 0 and fake_llm.CALLS == []
    seen.clear()
    assert main(["verify", str(source), "--verifier", "sample:3", "--quiet", "--out", str(home / "again")]) == 0
    assert len(fake_llm.CALLS) == 18
    assert eia(out, capsys)["flagged"] == 3


def test_a_judge_sees_no_label_and_one_that_is_the_self_critic_copies_its_verdict(home, fake_llm, capsys):
    source = home / "self"
    assert run(source, "--critic", "self", "--limit", "10") == 0
    fake_llm.CALLS.clear()
    capsys.readouterr()
    assert main(["verify", str(source), "--verifier", "judge:fake/model", "--quiet"]) == 0
    # the self critic's very requests: the response cache answers them, no call
    assert "at most 10 calls" in capsys.readouterr().err and fake_llm.CALLS == []
    out = home / "self__verify-judge-fake_model"
    stored = {e["item_id"]: e for e in entries(source)}
    checks = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS)]
    assert len(checks) == 10
    for p in checks:
        assert p["judge_verdict"] == stored[p["item_id"]]["verdict"]  # the critic's own request: its verdict
        assert p["survives"] == (p["judge_verdict"] == "right")
    for c in calls(out, "probe"):
        assert "Correct answer" not in c["messages"][0]["content"] and c["template"] == "critic_self.j2"
    verdicts = Counter(e["verdict"] for e in stored.values())
    assert verdicts["right"] and verdicts["wrong"]  # both, so that the correlations are defined
    row = eia(out, capsys)
    assert row["corr_nu_b"] == pytest.approx(1.0) and row["model"] == "fake/model"
    # another judge model: its calls go to that model, and the run says it is the judge's
    fake_llm.CALLS.clear()
    assert main(["verify", str(source), "--verifier", "judge:fake/other", "--quiet"]) == 0
    assert len(fake_llm.CALLS) == 10
    assert {c["model"] for c in fake_llm.CALLS} == {"other"} or {c["model"] for c in fake_llm.CALLS} == {"fake/other"}
    manifest = json.loads((home / "self__verify-judge-fake_other" / rundir.MANIFEST).read_text())
    assert manifest["config"]["model"] == "fake/other" and manifest["probe"]["verifier"] == "judge:fake/other"
