"""many_shot, the in-context baseline (critique.engine.many_shot): as many labeled train items as fit in the
context, in the seeded order the manifest states, the same examples before every test question, no retrieval, no
embedding of the train split and no train-stage call; Table 1 and the methods table show it."""

import json
from types import SimpleNamespace

import pytest

from critique.base import rundir
from critique.base.config import RunConfig
from critique.base.vocab import MANY_SHOT, ZERO_SHOT
from critique.cli import main
from critique.datasets.registry import resolve
from critique.datasets.splits import Item
from critique.datasets.subsets import seeded_rank
from critique.engine import agents, many_shot, prompts
from critique.engine.strategies import MANY_SHOT_TEMPLATE, STRATEGIES

LIMIT = 8
# examples in each set's prompt: a numbered block in one message, or an earlier exchange answered by the assistant
SHOWN = {"paper": lambda ms: ms[0]["content"].count("\nPast question "),
         "compact": lambda ms: ms[0]["content"].count("\nExample "),
         "turns": lambda ms: sum(m["role"] == "assistant" for m in ms)}


def _run(home, prompt_set: str, context_tokens: int, dataset: str = "mcr-gen", limit: int = LIMIT) -> dict:
    out = home / f"run-{prompt_set}-{dataset}"
    assert main(["run", "--dataset", dataset, "--model", "fake/model", "--limit", str(limit), "--prompts", prompt_set,
                 "--context-tokens", str(context_tokens), "--strategies", f"{ZERO_SHOT},{MANY_SHOT}",
                 "--out", str(out), "--quiet"]) == 0
    calls = rundir.read_jsonl(out / rundir.CALLS)
    return {"out": out, "manifest": rundir.read_manifest(out), "calls": calls,
            "asked": {c["item_id"]: c for c in calls if c["strategy"] == MANY_SHOT},
            "predictions": [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["strategy"] == MANY_SHOT]}


def test_many_shot_shows_exactly_what_fits_in_the_stated_order_without_retrieval(home, fake_llm, monkeypatch,
                                                                                  capsys):
    from critique.engine.memory import embed

    encoded = []
    original = embed.Encoder.encode
    monkeypatch.setattr(embed.Encoder, "encode", lambda self, texts: encoded.extend(texts) or original(self, texts))
    done = _run(home, "paper", 700)
    data = resolve("mcr-gen").limited(LIMIT)
    assert {c["stage"] for c in done["calls"]} == {"test"}  # no initial answer, critique or summary
    assert not set(encoded) & {i.question for i in data.train}  # the train split is never embedded

    record = done["manifest"][MANY_SHOT]
    assert record["order"] == many_shot.ORDER and "seeded_rank" in record["order"]
    pool = record["pools"]["all"]
    n = pool["examples"]
    assert pool["labeled"] == LIMIT and 0 < n < LIMIT  # the context bites: some fit, not all
    order = sorted(data.train, key=lambda i: seeded_rank(RunConfig.seed, i.user, i.id, MANY_SHOT))
    expected = [i.id for i in order[:n]]
    assert len(done["predictions"]) == LIMIT
    assert all(p["retrieved"] == expected and p["retrieved_scores"] is None for p in done["predictions"])
    for call in done["asked"].values():  # every test question: the same n examples, in that order, then itself
        text = call["messages"][0]["content"]
        assert SHOWN["paper"](call["messages"]) == n
        at = [text.index(f"Past question {k + 1}:\n{item.question}\nCorrect answer: {item.answer}")
              for k, item in enumerate(order[:n])]
        assert at == sorted(at) and order[n].question not in text

    # exactly what fits: the fitted question's prompt with one example more would not be sent
    from critique.llm.client import LLM, llm_config

    llm = LLM(llm_config(RunConfig(dataset="mcr-gen", model="fake/model", context_tokens=700)))
    fitted = next(i for i in data.test if i.id == pool["fitted_to"])
    assert done["asked"][fitted.id]["messages"] == _prompt(fitted, order[:n])
    assert not llm.overflows(_prompt(fitted, order[:n])) and llm.overflows(_prompt(fitted, order[:n + 1]))
    assert record["prompt_limit"] == 700 - min(RunConfig.max_tokens, 64)

    capsys.readouterr()
    assert main(["tables", str(done["out"]), "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert [r["strategy"] for r in tables["table1"]] == [ZERO_SHOT, MANY_SHOT]
    assert {r["n"] for r in tables["table1"]} == {LIMIT}
    rows = [r for r in tables["methods"] if r["method"] == MANY_SHOT]
    spent = sum(p["prompt_tokens"] + p["completion_tokens"] for p in done["predictions"]) / LIMIT
    assert [r["against"] for r in rows] == [ZERO_SHOT]
    assert rows[0]["offline_calls"] == rows[0]["offline_tokens"] == 0 and rows[0]["n"] == LIMIT
    assert rows[0]["total_tokens_per_question"] == pytest.approx(spent) and spent > LIMIT  # its examples, paid

    before = len(fake_llm.CALLS)
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(LIMIT), "--prompts", "paper",
                 "--context-tokens", "700", "--strategies", f"{ZERO_SHOT},{MANY_SHOT}", "--out", str(done["out"]),
                 "--quiet"]) == 0
    assert len(fake_llm.CALLS) == before and rundir.read_manifest(done["out"])[MANY_SHOT] == record  # resumed


def _prompt(item: Item, shown: list[Item]) -> list[dict]:
    examples = [agents.labeled_example(i, i.answer) for i in shown]
    task = prompts.Task(resolve("mcr-gen").card.task, "paper")
    return agents.performance_prompt(MANY_SHOT_TEMPLATE, task, item, resolve("mcr-gen").card.answer_space, examples,
                                     None, "full").messages


@pytest.mark.parametrize("prompt_set,dataset,context_tokens", [("compact", "mcr-gen", 600),
                                                                ("turns", "pref-gen", 450)])
def test_the_count_recorded_is_the_examples_in_each_prompt(home, fake_llm, prompt_set, dataset, context_tokens):
    done = _run(home, prompt_set, context_tokens, dataset, limit=4)
    pools = done["manifest"][MANY_SHOT]["pools"]
    assert any(0 < p["examples"] < p["labeled"] for p in pools.values())  # the context bites somewhere
    assert done["predictions"] and all(not p["context_overflow"] for p in done["predictions"])
    for p in done["predictions"]:
        count = pools[p["user"] or "all"]["examples"]
        assert len(p["retrieved"]) == count == SHOWN[prompt_set](done["asked"][p["item_id"]]["messages"])


def test_a_question_longer_than_the_fitted_one_is_shown_a_shorter_prefix_and_none_is_zero_shots_prompt():
    task = prompts.Task("TASK", "paper")
    train = [Item(f"t{n}", f"train question {n} " + "word " * 20, "A") for n in range(6)]
    test = [Item("q1", "short question", "A")]
    limit = 120  # words a prompt may hold, in this stand-in for the model's context

    def overflows(messages):
        return sum(len(m["content"].split()) for m in messages) > limit

    llm = SimpleNamespace(context_window=limit, overflows=overflows,
                          count_tokens=lambda ms: sum(len(m["content"].split()) for m in ms))
    run = SimpleNamespace(config=RunConfig(dataset="d", model="fake/model"), learned={}, task=task, space=["A", "B"],
                          llm=llm, dataset=SimpleNamespace(train=train, test=test))
    method = many_shot.ManyShot()
    short, _ = method.prompt(run, test[0], None)
    n = run.learned[MANY_SHOT]["record"]["pools"]["all"]["examples"]
    assert 0 < n < len(train) and not overflows(short.messages)
    longer, shown = method.prompt(run, Item("q2", "long question " + "word " * 40, "A"), None)
    assert len(shown) < n and not overflows(longer.messages)
    assert [e["id"] for e in shown] == [e["id"] for e in run.learned[MANY_SHOT]["shown"]["all"][:len(shown)]]
    alone, none = method.prompt(run, Item("q3", "word " * 200, "A"), None)
    assert not none and alone.messages == agents.performance_prompt(
        STRATEGIES[ZERO_SHOT].template, task, Item("q3", "word " * 200, "A"), ["A", "B"], [], None, "full").messages


@pytest.mark.parametrize("prompt_set", ["paper", "compact"])
def test_an_example_is_shown_as_ep_label_shows_it_less_the_initial_response(prompt_set):
    task, item = prompts.Task("TASK", prompt_set), Item("q", "THE-QUESTION", "2")
    example = {**agents.labeled_example(Item("e1", "PAST-QUESTION", "1"), "1"), "initial_answer": "3"}

    def shown(template):
        prompt = agents.performance_prompt(template, task, item, ["1", "2"], [example], None, "full")
        return prompt.messages[0]["content"]

    ep_label, many = shown(STRATEGIES["EP_LABEL"].template), shown(MANY_SHOT_TEMPLATE)
    answered = "Your initial response: 3\n" if prompt_set == "paper" else "Earlier answer: 3\n"
    block = ("Past question 1:\nPAST-QUESTION\n{}Correct answer: 1" if prompt_set == "paper"
             else "Example 1:\nPAST-QUESTION\n{}Correct answer: 1")
    assert block.format(answered) in ep_label and block.format("") in many
    assert "initial" not in many.lower() and "Earlier answer" not in many and "THE-QUESTION" in many
