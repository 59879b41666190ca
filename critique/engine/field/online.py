"""What the field's online methods share (``dc:online``, ``ace:online``): they answer the test questions
themselves, per pool in the stream's seeded order (critique.datasets.subsets.stream_order), each with the memory
as it stands, and learn from each answer before the next; their learning calls go through an Offline ledger
(counted, stopped by --train-budget) and their memory is saved like an offline method's (memory/METHOD.json)."""

from __future__ import annotations

from critique.datasets.subsets import stream_order
from critique.engine import parsing, question
from critique.engine.field import memory
from critique.engine.memory.episodic import entry_id


async def each_test_pool(run, name: str, work) -> tuple[dict, dict]:
    """``work(items, ledger)`` for the test items of each pool, in the stream's order, the pools at once; returns
    (pool -> what its work returned, pool -> its ledger)."""
    return await memory.each_pool(run, name, work, run.dataset.test,
                                  lambda items: stream_order(items, run.config.seed))


async def answer(run, name: str, item, prompt, notes: list[dict], vectors: dict, policy) -> dict:
    """The test prediction of ``item`` through the one test-question step (a logged one of the same request is
    kept), with the notes it was shown."""
    shown = memory.shown(notes, memory.encoded(run, notes), vectors[entry_id(item)])
    return await question.ask(run, name, item, found=(prompt, shown), policy=policy, keep_same=True)


def reply_of(run, record: dict) -> str | None:
    """The reply text of a prediction's call (None: no reply, as for a prompt that did not fit)."""
    return (run.logged.get(record.get("request_hash")) or {}).get("response")


def stop(run, name: str, rest: list, why: str) -> None:
    """The questions after a failed call: each an error a rerun retries (the memory they need is not there)."""
    for item in rest:
        wrong = parsing.wrong_answer(item.answer, run.space, item.user, item.id, name)
        run.unanswered("test", name, item, f"{name} stopped: {why}; rerun to go on", answer=wrong)
