"""The critique strategies on --train-budget (critique.engine.field.budgeted: EP_CRIT:budget, SEM_CRIT:budget,
EP+SEM_CRIT:budget) on the fake model: each walks the train split in order asking the shared train stage's own
requests until its budget is spent, keeps the items it reached, answers every test question with its strategy's
prompt over them, replays with no call, and shows in the methods table beside the unbudgeted strategies; no
offline stage passes its budget by more than one call, even when it sends calls at once; and a budgeted variant
without a budget is refused in one line."""

import asyncio
import json

from critique.base import rundir
from critique.cli import main
from critique.engine.agents import Prompt
from critique.engine.field.offline import Offline
from critique.llm.client import LLMResult
from killed import kill_after_calls

LIMIT = 6
BUDGET = 1500
VARIANTS = ("EP_CRIT:budget", "SEM_CRIT:budget", "EP+SEM_CRIT:budget")
SHARED = ("zero_shot", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")


def argv(out, strategies, *extra: str) -> list[str]:
    return ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--k", "3",
            "--strategies", ",".join(strategies), "--out", str(out), "--quiet", *extra]


def memory_of(out, name: str) -> dict:
    file = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return json.loads((out / "memory" / f"{file}.json").read_text(encoding="utf-8"))


def train_items(home) -> dict[str, str]:
    """The run's train items, id -> question, in train order."""
    lines = (home / "data" / "mcr-gen" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["id"]: record["question"] for record in map(json.loads, lines[:LIMIT])}


def tokens(call: dict) -> int:
    return call["prompt_tokens"] + call["completion_tokens"]


def test_a_budgeted_stage_asks_one_call_at_a_time_and_passes_its_budget_by_one_call_at_most():
    class Run:  # each call ends after the others have started, and spends 100 tokens
        async def call(self, stage, strategy, item_id, user, prompt, schema, name, *rest):
            for _ in range(3):
                await asyncio.sleep(0)
            return LLMResult("{}", prompt_tokens=90, completion_tokens=10, request_hash=prompt.messages[0]["content"])

    async def stage() -> Offline:
        offline = Offline(Run(), "m", budget=250)
        prompts = [Prompt("t", "h", [{"role": "user", "content": f"q{n}"}]) for n in range(10)]
        await asyncio.gather(*(offline.ask("s", None, p, {}, "answer") for p in prompts))  # sent at once
        return offline

    offline = asyncio.run(stage())
    assert offline.stopped == "budget"
    assert offline.calls == 3 and offline.spent == 300  # asked at 0, 100 and 200 spent; the third crosses 250


def test_each_variant_stops_at_its_budget_with_the_items_it_reached(home, fake_llm):
    out = home / "run"
    assert main(argv(out, SHARED + VARIANTS, "--train-budget", str(BUDGET))) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    by_hash = {c["request_hash"]: c for c in calls}
    questions = train_items(home)
    train = list(questions)
    shared = {(c["stage"], c["item_id"]): c["request_hash"] for c in calls if c["strategy"] is None}
    walk = [shared[(stage, item)] for item in train for stage in ("train_predict", "critique")]
    for name in VARIANTS:
        pool = memory_of(out, name)["pools"]["all"]
        asked = pool["requests"]
        assert pool["stopped"] == "budget" and pool["train_budget"] == BUDGET
        assert pool["offline_calls"] == len(asked) and pool["offline_tokens"] == sum(tokens(by_hash[h]) for h in asked)
        assert pool["offline_tokens"] <= BUDGET + max(tokens(by_hash[h]) for h in asked)  # one call past it at most
        summaries = [h for h in asked if by_hash[h]["stage"] == "budget_summary"]
        steps = [h for h in asked if h not in summaries]
        assert steps == walk[:len(steps)] and len(steps) < len(walk)  # the train stage's requests, in train order
        reached = [n["sources"][0] for n in pool["notes"] if not n["id"].startswith("advice:")]
        advice = [n for n in pool["notes"] if n["id"].startswith("advice:")]
        if name != "SEM_CRIT:budget":  # its episodic entries: the items the walk reached, first ones first
            assert reached and reached == train[:len(reached)] and len(reached) < LIMIT
        if name != "EP_CRIT:budget":  # one summary, of the critiques it kept
            assert len(summaries) == 1 and advice and by_hash[summaries[0]]["strategy"] in VARIANTS
            kept = advice[0]["sources"]
            shown = by_hash[summaries[0]]["messages"][0]["content"]
            assert kept == train[:len(kept)] and 0 < len(kept) < LIMIT
            assert memory_of(out, name)["semantic"]["all"]["source_ids"] == kept
            assert [item for item in train if questions[item] in shown] == kept  # it summarises those alone
        else:
            assert not summaries and not advice
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    for name in VARIANTS:  # logged like any strategy's answers, each with the notes its prompt showed
        mine = [r for r in tests if r["strategy"] == name]
        notes = {n["id"] for n in memory_of(out, name)["pools"]["all"]["notes"]}
        assert len(mine) == LIMIT and not any(r.get("error") for r in mine)
        assert all(r["retrieved"] and set(r["retrieved"]) <= notes for r in mine)
        assert all(len(r["retrieved_scores"]) == len(r["retrieved"]) for r in mine)
    fake_llm.CALLS.clear()
    assert main(argv(out, SHARED + VARIANTS, "--train-budget", str(BUDGET))) == 0 and fake_llm.CALLS == []


def test_the_methods_table_shows_each_variant_beside_the_unbudgeted_strategies(home, fake_llm, tmp_path):
    out = home / "run"
    assert main(argv(out, SHARED + VARIANTS + ("ace",), "--train-budget", str(BUDGET))) == 0
    report = tmp_path / "tables.json"
    assert main(["tables", str(out), "--format", "json", "-o", str(report)]) in (0, 1)
    rows = {}
    for row in json.loads(report.read_text(encoding="utf-8"))["methods"]:
        rows.setdefault(row["method"], row)
    assert set(VARIANTS) | {"ace", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"} <= set(rows)
    for name in VARIANTS:
        pool = memory_of(out, name)["pools"]["all"]
        assert (rows[name]["offline_calls"], rows[name]["offline_tokens"]) == (pool["offline_calls"],
                                                                               pool["offline_tokens"])
        assert rows[name]["train_budget"] == BUDGET and rows[name]["stopped"] == "1 of 1 (budget)"
        assert rows[name]["offline_tokens"] < rows[name.removesuffix(":budget")]["offline_tokens"]
        assert rows[name.removesuffix(":budget")]["train_budget"] is None  # the shared train stage: not limited
    train = [c for c in rundir.read_jsonl(out / "calls.jsonl") if c["stage"] in ("train_predict", "critique",
                                                                                   "summary")]
    assert rows["EP_CRIT"]["offline_tokens"] == sum(tokens(c) for c in train)  # never a variant's own calls


def test_a_variant_alone_pays_only_its_budget_and_resumes_after_kill_9(home, fake_llm):
    name, out, whole = "EP+SEM_CRIT:budget", home / "killed", home / "whole"
    command = kill_after_calls(argv(out, ("zero_shot", name), "--train-budget", str(BUDGET), "--no-cache"), out, 4)
    assert main(command[2:]) == 0
    assert main(argv(whole, ("zero_shot", name), "--train-budget", str(BUDGET), "--no-cache")) == 0
    calls = rundir.read_jsonl(whole / "calls.jsonl")
    offline = [c for c in calls if c["stage"] != "test"]
    assert {c["stage"] for c in offline} == {"budget_train_predict", "budget_critique", "budget_summary"}
    assert {c["strategy"] for c in offline} == {name}
    assert sum(tokens(c) for c in offline) <= BUDGET + max(tokens(c) for c in offline)
    assert [c["request_hash"] for c in offline] == memory_of(whole, name)["pools"]["all"]["requests"]
    resumed = rundir.read_jsonl(out / "calls.jsonl")
    assert len({c["request_hash"] for c in resumed}) == len(resumed)  # no call made twice
    assert sorted(c["request_hash"] for c in resumed) == sorted(c["request_hash"] for c in calls)
    assert memory_of(out, name)["pools"] == memory_of(whole, name)["pools"]


def test_a_budget_that_reaches_every_item_gives_the_strategys_own_answers(home, fake_llm):
    out = home / "run"
    assert main(argv(out, SHARED + VARIANTS, "--train-budget", "1000000")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert not [c for c in calls if c["stage"].startswith("budget_")]  # every request answered from the log
    answers = {(r["strategy"], r["item_id"]): r for r in rundir.read_jsonl(out / "predictions.jsonl")
               if r["stage"] == "test"}
    for name in VARIANTS:
        assert memory_of(out, name)["pools"]["all"]["stopped"] is None
        strategy = name.removesuffix(":budget")
        for (who, item), record in answers.items():
            if who == strategy:
                assert answers[(name, item)]["request_hash"] == record["request_hash"]
                assert [i for i in answers[(name, item)]["retrieved"] if not i.startswith("advice:")] == \
                    record["retrieved"]


def test_a_budgeted_variant_without_a_train_budget_is_refused_in_one_line(home, fake_llm, capsys):
    out = home / "run"
    assert main(argv(out, ("zero_shot", "EP+SEM_CRIT:budget"))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("critique: error:")
    assert "--train-budget must be given with EP+SEM_CRIT:budget" in err
    assert fake_llm.CALLS == [] and not out.exists()
