"""What the field's methods share once their offline stage is done (the memory file each leaves is
critique.engine.method_memory's): the notes a prompt shows with their similarity
to the question, the pools each learns in and its share of the budget, and the error of a test question whose
method has no memory yet."""

from __future__ import annotations

import asyncio

import numpy as np

from critique.engine.field.offline import Offline
from critique.engine.memory.episodic import Retrieved, pool_of


async def each_pool(run, name: str, work, items: list | None = None, order=list) -> tuple[dict, dict]:
    """``work(items, offline)`` for the items (default: the train split) of each pool at once, in ``order``, each
    pool with its own Offline stage on its share of the budget; returns (pool -> what its work returned, pool ->
    its Offline)."""
    pools: dict[str, list] = {}
    for item in run.dataset.train if items is None else items:
        pools.setdefault(pool_of(item.user), []).append(item)
    offline = {pool: Offline(run, name, budget=budget_share(run, pools)) for pool in pools}
    done = await asyncio.gather(*(work(order(mine), offline[pool]) for pool, mine in pools.items()))
    return dict(zip(pools, done)), offline


def ready(run, name: str, item):
    """(the method's memory, the item's pool) when its stage left a memory for the pool; None otherwise (the
    prediction is then an error: ``not_ready``)."""
    learned = run.learned.get(name)
    pool = pool_of(item.user)
    if learned is None or pool not in learned.offline or learned.offline[pool].failed:
        return None
    return learned, pool


def budget_share(run, pools) -> int | None:
    """Each pool's share of --train-budget (the pools learn at once, each on its own budget, so that where each
    stops does not depend on how their calls interleave)."""
    budget = run.config.train_budget
    return None if budget is None or not pools else max(1, budget // len(pools))


def encoded(run, notes: list[dict]):
    """The notes' texts encoded by the run's encoder (once per memory: ``shown`` takes them)."""
    return np.asarray(run.encoder.encode([n["text"] for n in notes])) if notes else np.zeros((0, 1), np.float32)


def shown(notes: list[dict], vectors, vector) -> Retrieved:
    """The notes a prompt shows, as the prediction records them: their ids, each with its similarity to the
    question (cosine: the encoder's vectors are L2-normalised); ``vectors``: ``encoded(run, notes)``."""
    if not notes:
        return Retrieved([], [])
    return Retrieved([{"id": n["id"]} for n in notes], vectors @ np.asarray(vector))


def not_ready(run, name: str, item) -> str:
    """The error of a test question whose method's offline stage has not finished (a rerun goes on with it)."""
    learned = run.learned.get(name)
    offline = learned.offline.get(pool_of(item.user)) if learned is not None else None
    why = offline.stopped if offline is not None else "its offline stage has not run for this pool"
    return f"no {name} memory ({why})"
