"""Ablations on the fake provider: K, train size (nested subsets), critique parts; reuse of
a matching run's train stage."""

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critique.datasets import subsets
from critique.base import rundir
from critique.cli import main
from critique.datasets.splits import Item


def ablate(home, *args, limit=6):
    return main(["ablate", *args, "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(limit),
                 "--out", str(home / "runs"), "--quiet"])


def read(path):
    return rundir.read_run(path)


def offline(calls):
    return [c for c in calls if c["stage"] in ("train_predict", "critique", "summary")]


# ---- nested train subsets ---------------------------------------------------------------------
pools = st.lists(st.tuples(st.sampled_from([None, "u1", "u2"]), st.integers(0, 500)), max_size=60, unique=True)
fractions = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(pools, fractions, fractions, st.integers(0, 3))
def test_train_subsets_are_nested_per_user_and_keep_the_order(keys, f1, f2, seed):
    items = [Item(f"i{n}", f"question {n}", "1", user) for user, n in keys]
    small, large = sorted((f1, f2))
    a, b = subsets.train_subset(items, small, seed), subsets.train_subset(items, large, seed)
    assert {(i.user, i.id) for i in a} <= {(i.user, i.id) for i in b}  # nested
    assert subsets.train_subset(items, 1.0, seed) == items  # the whole train set, in its order
    for subset, f in ((a, small), (b, large)):
        assert subset == [i for i in items if i in subset]  # original order kept
        for user in {i.user for i in items}:
            n = sum(i.user == user for i in items)
            assert sum(i.user == user for i in subset) == subsets.subset_size(f, n) >= 1  # per user, never empty
    assert subsets.train_subset(list(reversed(items)), small, seed) == list(reversed(a))  # order-independent choice


def test_train_subset_depends_on_the_seed_and_rejects_bad_fractions():
    items = [Item(f"i{n}", "q", "1") for n in range(40)]
    assert subsets.train_subset(items, 0.5, 0) != subsets.train_subset(items, 0.5, 1)
    for bad in (0, -0.1, 1.5):
        with pytest.raises(ValueError):
            subsets.train_subset(items, bad, 0)


# ---- K ------------------------------------------------------------------------------------------
def test_k_sweep_pays_the_train_stage_once(home, fake_llm, capsys):
    assert ablate(home, "k", "--values", "1,3", "--no-cache") == 0
    printed = capsys.readouterr().out
    assert "ablation k" in printed and "| 1 | EP_CRIT | 6 |" in printed and "| 3 | EP_CRIT | 6 |" in printed
    assert len(fake_llm.CALLS) == 6 + 6 + 6 + 6  # initial predictions + critiques once, EP_CRIT twice; no summary
    first, second = (read(home / "runs" / f"mcr-gen__fake_model__k-{k}") for k in (1, 3))
    for k, data in ((1, first), (3, second)):
        m = data["manifest"]
        assert m["ablation"] == {"name": "k", "value": k} and m["probe"] is None and m["status"] == "complete"
        assert m["config"]["k"] == k and m["config"]["strategies"] == ["EP_CRIT"]
        tests = [p for p in data["predictions"] if p["stage"] == "test"]
        assert len(tests) == 6 and all(p["strategy"] == "EP_CRIT" and len(p["retrieved"]) == k for p in tests)
        assert all(p["ablation"] == m["ablation"] and p["probe"] is None for p in data["predictions"])
        assert all(c["ablation"] == m["ablation"] for c in data["calls"])
    assert not any(c["cached"] for c in offline(first["calls"]))
    reused = offline(second["calls"])
    assert len(reused) == 12 and all(c["cached"] for c in reused)  # logged, with the original usage
    paid = {c["request_hash"]: c for c in offline(first["calls"])}
    assert all(c["completion_tokens"] == paid[c["request_hash"]]["completion_tokens"] > 0 for c in reused)


def test_ablation_reuses_the_train_stage_of_a_matching_plain_run(home, fake_llm):
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--strategies",
                 "zero_shot,EP_CRIT", "--out", str(home / "runs" / "mcr-gen__fake_model"), "--quiet",
                 "--no-cache"]) == 0
    fake_llm.CALLS.clear()
    assert ablate(home, "parts", "--values", "full,local", "--no-cache") == 0
    # the train stage is the plain run's; each parts run's test calls are its own (an independent trial,
    # parts=full too, though its requests are the plain run's EP_CRIT ones)
    assert len(fake_llm.CALLS) == 6 + 6
    full = read(home / "runs" / "mcr-gen__fake_model__parts-full")
    assert not any(c["cached"] for c in full["calls"] if c["stage"] == "test")
    assert all(c["cached"] for c in offline(full["calls"]))
    local = read(home / "runs" / "mcr-gen__fake_model__parts-local")
    assert local["manifest"]["config"]["parts"] == "local"
    assert local["manifest"]["ablation"] == {"name": "parts", "value": "local"}
    for call in local["calls"]:
        if call["stage"] == "test":
            text = call["messages"][0]["content"]
            assert "Why, for this question:" in text and "Lesson for similar questions:" not in text
    assert all(c["cached"] for c in offline(local["calls"]))


# ---- train size ---------------------------------------------------------------------------------
def test_train_size_sweep_costs_the_largest_fraction_plus_the_summaries(home, fake_llm, capsys):
    assert ablate(home, "train-size", "--fractions", "0.5,1.0", "--no-cache", limit=8) == 0
    half, full = (read(home / "runs" / f"mcr-gen__fake_model__train_size-{v}") for v in ("0.5", "1"))
    paid = Counter(c["stage"] for d in (half, full) for c in d["calls"] if not c["cached"])
    assert paid == {"train_predict": 8, "critique": 8, "summary": 2, "test": 8 * 2 * 2}
    assert half["manifest"]["config"]["train_fraction"] == 0.5 and half["manifest"]["dataset"]["n_train"] == 4
    assert full["manifest"]["config"]["train_fraction"] == 1.0 and full["manifest"]["dataset"]["n_train"] == 8
    assert half["manifest"]["ablation"] == {"name": "train_size", "value": 0.5}
    for data in (half, full):
        tests = Counter(p["strategy"] for p in data["predictions"] if p["stage"] == "test")
        assert tests == {"EP_CRIT": 8, "EP+SEM_CRIT": 8}
    memory = {v: rundir.read_jsonl(home / "runs" / f"mcr-gen__fake_model__train_size-{v}" / "memory" /
                                 "episodic.jsonl") for v in ("0.5", "1")}
    small = {e["item_id"] for e in memory["0.5"]}
    assert len(small) == 4 and small <= {e["item_id"] for e in memory["1"]}
    semantic = json.loads((home / "runs" / "mcr-gen__fake_model__train_size-0.5" / "memory" /
                           "semantic.json").read_text())
    assert set(semantic["all"]["source_ids"]) == small  # regenerated from the subset's critiques
    retrieved = {r for p in half["predictions"] if p["stage"] == "test" for r in p["retrieved"]}
    assert retrieved <= small
    assert "ablation train_size" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["k", "--values", "0,3"], "values must be whole numbers >= 1"),
    (["train-size", "--fractions", "0.5,2"], "fractions must be in (0, 1]"),
    (["parts", "--values", "local,middle"], "values must be among full, local, global"),
])
def test_bad_values_write_nothing(home, fake_llm, capsys, args, message):
    assert ablate(home, *args) == 2
    assert message in capsys.readouterr().err
    assert not (home / "runs").exists() and fake_llm.CALLS == []


def test_reasoning_settings_pass_through_and_timeouts_are_counted_per_stage(home, fake_llm, monkeypatch, capsys):
    """A reasoning provider: every reply spends 7 reasoning tokens, and critiques hit the token limit."""
    import litellm

    handler, seen = fake_llm._HANDLER, []
    inner = handler.completion

    def reasoning(model, messages, *args, optional_params=None, **kwargs):
        seen.append(dict(optional_params or {}))
        response = inner(model, messages, *args, optional_params=optional_params, **kwargs)
        text = response.choices[0].message.content
        response.usage = litellm.Usage(prompt_tokens=response.usage.prompt_tokens,
                                       completion_tokens=len(text.split()) + 7,
                                       total_tokens=response.usage.prompt_tokens + len(text.split()) + 7,
                                       completion_tokens_details={"reasoning_tokens": 7})
        if "correct_answer" in text:
            response.choices[0].finish_reason = "length"
        return response

    monkeypatch.setattr(handler, "completion", reasoning)
    assert main(["ablate", "k", "--values", "2", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4",
                 "--reasoning-effort", "high", "--max-tokens", "321", "--out", str(home / "runs"), "--quiet"]) == 0
    assert "timeouts per stage: critique 4" in capsys.readouterr().out
    assert seen and all(p["max_tokens"] == 321 for p in seen)
    data = read(home / "runs" / "mcr-gen__fake_model__k-2")
    config = data["manifest"]["config"]
    assert (config["reasoning_effort"], config["max_tokens"]) == ("high", 321)
    assert all(c["reasoning_tokens"] == 7 and c["completion_tokens"] == len(c["response"].split()) + 7
               for c in data["calls"])
    assert all(p["reasoning_tokens"] == 7 for p in data["predictions"])
    entries = rundir.read_jsonl(home / "runs" / "mcr-gen__fake_model__k-2" / "memory" / "episodic.jsonl")
    assert len(entries) == 4 and all(e["timeout"] for e in entries)  # the train stage's timeouts are kept
