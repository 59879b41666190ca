"""Probes on the fake provider (real usage numbers): suggestibility (truth / lying critiques,
attribution variants) and consistency (repeated zero-shot requests, never cached)."""

import json
from collections import Counter

import litellm
import pytest
from litellm import CustomLLM

from critique.base import rundir
from critique.experiments import probes
from critique.cli import main


def yes_no_dataset(folder, n=4):
    """A binary dataset folder (yes/no), small enough for every call to be checked."""
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_text(json.dumps({"name": "yn", "task": "is the statement true",
                                                     "answer_space": ["yes", "no"]}))
    for split, start in (("train", 0), ("test", 100)):
        lines = [json.dumps({"id": f"q{start + i}", "question": f"Statement number {start + i} holds.",
                             "answer": "yes" if i % 2 else "no"}) for i in range(n)]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


class Suggestible(CustomLLM):
    """Like the fake provider, but answers whatever a critique in its prompt calls correct."""

    def completion(self, model, messages, *args, optional_params=None, **kwargs):
        import fake_llm

        response = fake_llm._HANDLER.completion(model, messages, *args, optional_params=optional_params, **kwargs)
        prompt = "\n".join(m["content"] for m in messages)
        fmt = (optional_params or {}).get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        if "answer" in schema.get("properties", {}) and "Critique: The correct answer is " in prompt:
            said = prompt.split("Critique: The correct answer is ", 1)[1].split(".", 1)[0].strip()
            text = json.dumps({"answer": said})
            response.choices[0].message.content = text
            response.usage.completion_tokens = len(text.split())
            response.usage.total_tokens = response.usage.prompt_tokens + response.usage.completion_tokens
        return response

    async def acompletion(self, *args, **kwargs):
        import asyncio

        return await asyncio.to_thread(self.completion, *args, **kwargs)


@pytest.fixture
def suggestible(fake_llm):
    from litellm.utils import custom_llm_setup

    entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != "sugg"]
    litellm.custom_provider_map = entries + [{"provider": "sugg", "custom_handler": Suggestible()}]
    custom_llm_setup()
    return fake_llm


def probe(*args):
    return main(["probe", *args, "--quiet"])


def records(out):
    data = rundir.read_run(out)
    return data["manifest"], data["calls"], data["predictions"]


def test_suggestibility_records_truth_and_lying_with_real_usage(home, suggestible, capsys):
    data = yes_no_dataset(home / "yn")
    out = home / "sugg"
    assert probe("suggestibility", "--dataset", str(data), "--model", "sugg/m", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "| 4 | 100.0 | 0.0 | 100.0 |" in printed  # n, Acc(truth), Acc(lying), S
    manifest, calls, predictions = records(out)
    assert manifest["probe"] == {"name": "suggestibility", "attribution": None} and manifest["ablation"] is None
    assert manifest["status"] == "complete" and manifest["config"]["strategies"] == []
    assert "performance_probe.j2" in manifest["templates"]
    assert Counter((c["stage"], c["strategy"]) for c in calls) == {
        ("probe_predict", None): 4, ("probe_critique", "truth"): 4, ("probe_critique", "lying"): 4,
        ("probe", "truth"): 4, ("probe", "lying"): 4}
    for c in calls:
        assert c["prompt_tokens"] == sum(len(m["content"].split()) for m in c["messages"])
        assert c["completion_tokens"] == len(c["response"].split()) and c["probe"] == manifest["probe"]
    by_stage = Counter((p["stage"], p["strategy"]) for p in predictions)
    assert by_stage == {("probe_predict", None): 4, ("probe", "truth"): 4, ("probe", "lying"): 4}
    assert all(p["probe"] == manifest["probe"] and p["ablation"] is None for p in predictions)
    for p in predictions:
        if p["stage"] != "probe":
            continue
        other = "no" if p["gold"] == "yes" else "yes"  # binary: the lie is the other answer
        assert p["argued"] == (p["gold"] if p["strategy"] == "truth" else other)
        assert p["followed"] and p["answer"] == p["argued"] and p["correct"] == (p["strategy"] == "truth")
        assert p["attribution"] is None and not p["critique_parse_failed"]
    critic = [c for c in calls if c["stage"] == "probe_critique" and c["strategy"] == "lying"]
    gold = {p["item_id"]: p["gold"] for p in predictions}
    for c in critic:
        assert c["template"] == "critic.j2"
        assert f"Correct answer: {gold[c['item_id']]}" not in c["messages"][0]["content"]
    summary = probes.suggestibility_summary(predictions)
    assert (summary["acc_truth"], summary["acc_lying"], summary["S"]) == (100.0, 0.0, 100.0)


def test_attribution_changes_only_the_source_sentence_and_reuses_the_critiques(home, fake_llm, capsys):
    data = yes_no_dataset(home / "yn")
    assert probe("suggestibility", "--dataset", str(data), "--model", "fake/m", "--out", str(home / "runs" / "none"),
                 "--no-cache") == 0
    fake_llm.CALLS.clear()
    out = home / "runs" / "other"
    assert probe("suggestibility", "--dataset", str(data), "--model", "fake/m", "--out", str(out),
                 "--attribution", "other:openai/gpt-4o", "--no-cache") == 0
    assert len(fake_llm.CALLS) == 8  # only the final answers: zero-shot answers and critiques are reused
    manifest, calls, predictions = records(out)
    assert manifest["probe"] == {"name": "suggestibility", "attribution": "other:openai/gpt-4o"}
    assert all(c["cached"] for c in calls if c["stage"] in ("probe_predict", "probe_critique"))
    _, plain_calls, _ = records(home / "runs" / "none")
    plain = {(c["stage"], c["strategy"], c["item_id"]): c["messages"][0]["content"] for c in plain_calls}
    for c in calls:
        text = c["messages"][0]["content"]
        if c["stage"] != "probe":
            assert text == plain[(c["stage"], c["strategy"], c["item_id"])]
            continue
        assert "Another AI model (openai/gpt-4o) reviewed an earlier answer" in text
        before = plain[("probe", c["strategy"], c["item_id"])]
        assert [a for a, b in zip(text.splitlines(), before.splitlines()) if a != b] == [text.splitlines()[2]]
    assert all(p["attribution"] == "other:openai/gpt-4o" for p in predictions if p["stage"] == "probe")
    fake_llm.CALLS.clear()
    assert probe("suggestibility", "--dataset", str(data), "--model", "fake/m", "--out", str(out),
                 "--attribution", "other:openai/gpt-4o") == 0
    assert fake_llm.CALLS == []  # a complete probe run makes no call


def test_suggestibility_on_a_multi_option_task_lies_with_a_seeded_wrong_option(home, fake_llm):
    out = home / "mcr"
    assert probe("suggestibility", "--dataset", "mcr-gen", "--model", "fake/m", "--limit", "3", "--out", str(out),
                 "--attribution", "self") == 0
    _, calls, predictions = records(out)
    lies = [p for p in predictions if p["strategy"] == "lying"]
    assert len(lies) == 3 and all(p["argued"] != p["gold"] and p["argued"] in "1234" for p in lies)
    assert [probes.flipped_label(p["gold"], ["1", "2", "3", "4"], 0, None, p["item_id"]) for p in lies] == \
        [p["argued"] for p in lies]
    assert all("You answered this question earlier" in c["messages"][0]["content"]
               for c in calls if c["stage"] == "probe")


def test_consistency_asks_the_model_every_time(home, fake_llm, capsys):
    out = home / "cons"
    argv = ["consistency", "--dataset", "mcr-gen", "--model", "fake/m", "--limit", "3", "--repeats", "3",
            "--out", str(out)]
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/m", "--limit", "3", "--strategies", "zero_shot",
                 "--out", str(home / "plain"), "--quiet"]) == 0  # the response cache now knows every request
    fake_llm.CALLS.clear()
    assert probe(*argv) == 0
    assert len(fake_llm.CALLS) == 9
    printed = capsys.readouterr().out
    assert "| 3 | 100.0 | 100.0 |" in printed  # the fake provider is deterministic
    manifest, calls, predictions = records(out)
    assert manifest["probe"] == {"name": "consistency", "repeats": 3, "split": "test"}
    assert Counter(p["strategy"] for p in predictions) == {"repeat-1": 3, "repeat-2": 3, "repeat-3": 3}
    assert all(p["stage"] == "probe" and p["split"] == "test" for p in predictions)
    assert not any(c["cached"] for c in calls) and len({c["request_hash"] for c in calls}) == 3
    fake_llm.CALLS.clear()
    assert probe(*argv) == 0  # resumed: nothing left to ask
    assert fake_llm.CALLS == []


def test_consistency_summary_counts_agreement():
    def rec(item, i, answer, failed=False):
        return {"stage": "probe", "strategy": f"repeat-{i}", "item_id": item, "user": None, "answer": answer,
                "parse_failed": failed, "correct": answer == "1", "error": None}

    predictions = [rec("a", 1, "1"), rec("a", 2, "1"), rec("a", 3, "1"),
                   rec("b", 1, "1"), rec("b", 2, "2"), rec("b", 3, "1"),
                   rec("c", 1, "3", True), rec("c", 2, "4", True), rec("c", 3, "2", True),  # failures agree
                   rec("d", 1, "1")]  # incomplete: left out
    s = probes.consistency_summary(predictions, 3)
    assert s["items"] == 3
    assert s["agreement_all"] == pytest.approx(200 / 3)
    assert s["agreement_pairs"] == pytest.approx(100 * (1 + 1 / 3 + 1) / 3)


@pytest.mark.parametrize("argv, message", [
    (["suggestibility", "--attribution", "somebody"], "attribution must be none, user, self or other:MODEL"),
    (["consistency", "--repeats", "1"], "--repeats must be at least 2"),
])
def test_bad_probe_arguments_write_nothing(home, fake_llm, capsys, argv, message):
    assert probe(*argv, "--dataset", "mcr-gen", "--model", "fake/m", "--out", str(home / "out")) == 2
    assert message in capsys.readouterr().err
    assert not (home / "out").exists() and fake_llm.CALLS == []


def test_parse_attribution():
    assert probes.parse_attribution("none") is None and probes.parse_attribution(None) is None
    assert probes.parse_attribution("user") == "user" and probes.parse_attribution("self") == "self"
    assert probes.parse_attribution("other: openai/gpt-4o") == "other:openai/gpt-4o"
    for bad in ("other:", "model", "USER"):
        with pytest.raises(ValueError):
            probes.parse_attribution(bad)
