"""Semantic memory at any scale: the chunked summary on the fake model with a tiny context (its
tree, its provenance, a rerun and a kill in the middle of the merges), prompts that do not fit the
context (context_overflow), and the length bounds of the embedded model's replies."""

import asyncio
import json
from collections import Counter
from pathlib import Path

import litellm
import pytest

from critique.base import rundir
from critique.cli import main
from critique.base.config import RunConfig
from critique.engine import parsing, prompts
from critique.engine.memory import semantic
from critique.llm import bounds, context
from critique.llm.client import LLMResult
from killed import kill_after_calls

# With FAKE_LLM_ADVICE_LINES=8 and a window of 534 tokens, a summary prompt may hold 401: one
# mcr-gen critique (300 to 330 tokens with the instructions) and not two (450 to 490), and two
# advice lists (about 355) but not three (about 440). So 13 critiques make 13 chunks, merged two
# by two (a list left over passed up alone) over four levels.
CONTEXT = 534
LINES = "8"


def argv(out, limit, *extra):
    return ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(limit), "--k", "3",
            "--out", str(out), "--quiet", "--context-tokens", str(CONTEXT), *extra]


def check_tree(out: Path) -> dict:
    """The semantic memory of ``out`` against its calls: returns the pool's record."""
    sem = json.loads((out / "memory" / "semantic.json").read_text(encoding="utf-8"))["all"]
    ids = [e["id"] for e in rundir.read_jsonl(out / "memory" / "episodic.jsonl")]
    calls = [c for c in rundir.read_jsonl(out / "calls.jsonl") if c["stage"] == "summary"]
    by_hash = {c["request_hash"]: c for c in calls}
    tree = sem["tree"]
    assert sem["error"] is None and sem["context_tokens"] == CONTEXT and sem["source_ids"] == ids
    assert [i for node in tree[0] for i in node["source_ids"]] == ids  # level 0 partitions the pool, in order
    for level, below in zip(tree[1:], tree):
        assert sorted(i for node in level for i in node["inputs"]) == list(range(len(below)))
        for node in level:
            assert node["source_ids"] == [i for c in node["inputs"] for i in below[c]["source_ids"]]
    assert len(tree[-1]) == 1 and tree[-1][0]["request_hash"] == sem["request_hash"]
    # every critique reaches the final advice, and the advice the prompts show is those lines
    assert sem["lines"] and {i for line in sem["lines"] for i in line["source_ids"]} == set(ids)
    assert sem["advice"] == "\n".join(f"- {line['text']}" for line in sem["lines"])
    assert [line["text"] for line in sem["lines"]] == tree[-1][0]["lines"]
    budget = context.summary_budget(CONTEXT, 8192)
    asked = 0
    for number, level in enumerate(tree):
        for index, node in enumerate(level):
            if node["request_hash"] is None:  # a list passed up alone, without a call
                assert len(node["inputs"]) == 1 and node["lines"] == tree[number - 1][node["inputs"][0]]["lines"]
                continue
            asked += 1
            call = by_hash[node["request_hash"]]
            assert (call["summary_level"], call["summary_chunk"]) == (number, index)
            assert call["template"] == ("summary.j2" if number == 0 else "summary_merge.j2")
            assert litellm.token_counter(model="fake/model", messages=call["messages"]) <= budget
            assert node["lines"] == parsing.parse_advice(call["response"])
    assert len(calls) == asked == len(by_hash)  # one call per chunk, none made twice
    return sem


def test_chunked_summary_reaches_every_critique_and_a_rerun_asks_nothing(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_ADVICE_LINES", LINES)
    out = home / "run"
    assert main(argv(out, 13, "--strategies", "zero_shot,SEM_CRIT")) == 0
    sem = check_tree(out)
    shape = [[len(node.get("inputs") or node["source_ids"]) for node in level] for level in sem["tree"]]
    assert shape == [[1] * 13, [2] * 6 + [1], [2, 2, 2, 1], [2, 2], [2]]  # lists left over passed up alone
    sem_prompts = [c["messages"][0]["content"] for c in fake_llm.CALLS
                   if "Advice learned from critiques" in c["messages"][0]["content"]]
    assert len(sem_prompts) == 13 and all(sem["advice"] in text for text in sem_prompts)
    before = (out / "memory" / "semantic.json").read_bytes()
    fake_llm.CALLS.clear()
    assert main(argv(out, 13, "--strategies", "zero_shot,SEM_CRIT")) == 0
    assert fake_llm.CALLS == [] and (out / "memory" / "semantic.json").read_bytes() == before


def test_a_kill_in_the_middle_of_the_merges_resumes_without_redoing_a_finished_chunk(home, fake_llm, monkeypatch):
    out = home / "run"
    # 13 initial answers, 13 critiques, 13 level-0 chunks and the first of the 6 merges of level 1 are
    # answered; the next calls are held until the kill
    answered = 13 + 13 + 13 + 1
    command = kill_after_calls(argv(out, 13, "--strategies", "SEM_CRIT", "--concurrency", "2", "--no-cache"), out,
                               answered, FAKE_LLM_ADVICE_LINES=LINES)
    logged = rundir.read_jsonl(out / "calls.jsonl")
    assert len(logged) == answered and not (out / "memory" / "semantic.json").exists()
    assert Counter(c.get("summary_level") for c in logged if c["stage"] == "summary") == {0: 13, 1: 1}
    monkeypatch.setenv("FAKE_LLM_ADVICE_LINES", LINES)
    assert main(command[2:]) == 0  # resumed here, with nothing held
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert calls[:answered] == logged  # nothing rewritten
    redone = [c for c in calls[answered:] if c["stage"] == "summary"]
    assert Counter(c["summary_level"] for c in redone) == {1: 5, 2: 3, 3: 2, 4: 1}  # the merges not finished
    assert Counter(c["request_hash"] for c in calls).most_common(1)[0][1] == 1
    sem = check_tree(out)
    # the same memory as a run that was never interrupted
    whole = home / "whole"
    assert main(argv(whole, 13, "--strategies", "SEM_CRIT", "--no-cache")) == 0
    again = json.loads((whole / "memory" / "semantic.json").read_text(encoding="utf-8"))["all"]
    assert {**sem, "run_id": None} == {**again, "run_id": None}


def test_a_prompt_that_does_not_fit_is_not_sent_and_counts_wrong(home, fake_llm, capsys):
    out = home / "run"
    assert main(argv(out, 4)) == 0  # three retrieved examples do not fit 600 tokens; one question does
    data = rundir.read_run(out)
    over = [c for c in data["calls"] if c["context_overflow"]]
    assert {c["strategy"] for c in over} == {"EP_LABEL", "EP_CRIT", "EP+SEM_CRIT"} and len(over) == 12
    limit = context.prompt_limit(CONTEXT, 8192)
    sent = [c["messages"] for c in fake_llm.CALLS]
    for call in over:
        assert call["response"] is None and call["error"] is None and call["completion_tokens"] == 0
        assert call["prompt_tokens"] > limit and call["messages"] not in sent  # counted, never sent
    for p in data["predictions"]:
        assert p["context_overflow"] == (p["strategy"] in ("EP_LABEL", "EP_CRIT", "EP+SEM_CRIT"))
        if p["context_overflow"]:
            assert p["answer"] is None and p["correct"] is False and p["error"] is None
            assert not p["parse_failed"] and not p["timeout"]
    assert "| EP_CRIT | 4 | 0.0 | 0.0 | 0.0 | 100.0 | 0.0 | 0 | 0.0 |" in capsys.readouterr().out  # overflow: 100%
    fake_llm.CALLS.clear()
    assert main(argv(out, 4)) == 0 and fake_llm.CALLS == []  # an overflow is an outcome: not asked again


def test_a_provider_that_refuses_a_long_prompt_gives_an_overflow_not_an_error(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_CONTEXT", "200")  # whitespace tokens; the window is not known to critique
    out = home / "run"
    # SEM_CRIT needs the summary, which the provider refuses too: its answers have no advice (errors, exit 1)
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "3", "--k", "3",
                 "--strategies", "zero_shot,EP_CRIT,SEM_CRIT", "--out", str(out), "--quiet"]) == 1
    data = rundir.read_run(out)
    assert all("no semantic memory" in p["error"] for p in data["predictions"] if p["strategy"] == "SEM_CRIT")
    ep = [p for p in data["predictions"] if p["strategy"] == "EP_CRIT"]
    assert len(ep) == 3 and all(p["context_overflow"] and p["error"] is None and not p["correct"] for p in ep)
    refused = [c for c in data["calls"] if c["context_overflow"]]
    assert {(c["stage"], c["strategy"]) for c in refused} == {("test", "EP_CRIT"), ("summary", None)}
    assert all(c["retries"] == 0 and c["error"] is None for c in refused)
    sem = json.loads((out / "memory" / "semantic.json").read_text(encoding="utf-8"))["all"]
    assert sem["advice"] is None and "--context-tokens" in sem["error"]  # the way out, in the error


# ---- the distiller alone: whitespace tokens, a scripted model ----------------------------------
def entry(i: int, words: int = 5) -> dict:
    return {"id": f"e{i}", "question": " ".join(["word"] * words), "initial_answer": "1", "gold": "2",
            "critique": {"correct_answer": "It is 2.", "local_reason": "Because.", "global_reason": "Look."}}


def distil(entries, budget, fail=None):
    asked = []

    async def call(prompt, level, chunk):
        asked.append((level, chunk, prompt))
        if (level, chunk) == fail:
            return LLMResult(None, error="the provider refused", request_hash=f"h{level}.{chunk}")
        return LLMResult(json.dumps({"advice": [f"advice {level}.{chunk}"]}), request_hash=f"h{level}.{chunk}")

    count = lambda messages: sum(len(m["content"].split()) for m in messages)  # noqa: E731
    task = prompts.Task("a task", RunConfig.prompts)
    return asyncio.run(semantic.Distiller(task, call, count, budget).distil(entries)), asked


def test_a_critique_too_long_for_any_prompt_is_cut_visibly_and_named():
    done, asked = distil([entry(0), entry(1, words=5000), entry(2)], budget=300)
    assert done.error is None and {i for line in done.lines for i in line["source_ids"]} == {"e0", "e1", "e2"}
    cut = [node for node in done.tree[0] if node.shortened]
    assert [node.shortened for node in cut] == [["e1"]]
    prompt = next(p for level, chunk, p in asked if level == 0 and chunk == cut[0].chunk).messages[0]["content"]
    assert semantic.CUT_MARK in prompt and len(prompt.split()) <= 300


def test_a_failed_chunk_or_a_context_too_small_leaves_no_advice_and_says_why():
    done, _ = distil([entry(i, words=120) for i in range(4)], budget=300, fail=(0, 1))
    assert done.lines == [] and done.error == "summary level 0 chunk 1: the provider refused"
    assert done.request_hash == "h0.1"
    done, asked = distil([entry(0)], budget=20)
    assert done.lines == [] and "cannot hold the critique e0" in done.error and asked == []


def test_length_bounds_reach_only_the_embedded_model_and_cut_fields_name_what_reached_them():
    schema = parsing.SUMMARY_SCHEMA
    assert "maxItems" not in json.dumps(bounds.strip(schema)) and "maxLength" not in json.dumps(
        bounds.strip(parsing.CRITIQUE_SCHEMA))
    free = bounds.bounded({"type": "object", "properties": {"a": {"type": "string"},
                                                            "b": {"type": "string", "enum": ["x"]}}}, 80)
    assert free["properties"]["a"]["maxLength"] == 80 and "maxLength" not in free["properties"]["b"]
    line = parsing.FIELD_CHARS["advice_line"]
    reply = json.dumps({"advice": ["short", "x" * line, "y" * (line - 1)]})
    assert bounds.cut_fields(schema, reply) == ["advice[1]"]
    critique = {"correct_answer": "2", "local_reason": "r" * parsing.FIELD_CHARS["local_reason"],
                "global_reason": "g"}
    assert bounds.cut_fields(parsing.CRITIQUE_SCHEMA, json.dumps(critique)) == ["local_reason"]
    assert bounds.cut_fields(schema, "not json") == []


@pytest.mark.parametrize("window, expected", [(8192, 6144), (600, 450), (100, 36), (200_000, 191_808)])
def test_a_summary_prompt_leaves_room_for_the_reply(window, expected):
    assert context.summary_budget(window, 8192) == expected
