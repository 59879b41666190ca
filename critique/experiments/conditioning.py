"""The conditioning probe (docs/memory.md section 4): are past outcomes trophies, and procedures tools?

``critique probe conditioning --dataset D --model M [--lengths 1,4,16]`` (manifest ``probe`` =
``{"name": "conditioning", "lengths": [...]}``). The train stage runs as the study's does (initial answers, then
critiques against the gold labels; a run of the same model and data, or the response cache, answers its calls).
Its *trophies* are the memory entries whose initial answer was right as far as the run knows it (the label its
critic was shown; a self critic's verdict), in a seeded order. For each test item:

- ``none``: the zero-shot prompt (zero_shot's very request: the memory-off arm);
- ``outcomes@L``: a preamble of the agent's own past outcomes: the questions of the first L trophies, each said
  to have been answered right. The answers are not shown: an outcome to be proud of, not a label to copy;
- ``procedures@L``: a preamble of what the critiques of the same L answers said to do on similar questions (their
  lessons, ``global_reason``).

At each L both preambles come from the same entries, and a shorter preamble's entries are the first of a longer
one's, so the kind and the length are all that change. With fewer trophies than L, all are shown, and each
record lists the entries its preamble held (``entries``). Preference data: the trophies of the question's user;
a pool with none has no preamble to show, and its questions are asked in the ``none`` arm only.

The prediction this tests (P1 of the memory papers): outcomes do not help, and hurt more as they get longer;
procedures can help. The table (critique.analysis.memory.conditioning) puts each arm against ``none`` on the same
items. Prediction records: stage ``probe``, strategy the arm; ``preamble``, ``length``, ``entries``.
"""

from __future__ import annotations

import asyncio
import random

from critique.base import records
from critique.base.ids import pool_of
from critique.base.records import Field
from critique.base.vocab import CONDITIONING, CRITIQUE, PROBE, TRAIN
from critique.engine import agents
from critique.engine.memory import selection
from critique.engine.run_directory import pkey
from critique.experiments import arm_probes

NONE, OUTCOMES, PROCEDURES = "none", "outcomes", "procedures"
KINDS = (OUTCOMES, PROCEDURES)
LENGTHS = (1, 4, 16)  # the preamble's entries, on a log scale
TEMPLATE = "performance_conditioning.j2"
ZERO_SHOT_TEMPLATE = "performance_zero_shot.j2"

records.declare(CONDITIONING, (
    Field("preamble", "string", "conditioning: the preamble's kind: none, outcomes (questions the agent answered "
          "right) or procedures (the lessons of the critiques of the same answers)", required=False),
    Field("length", "integer", "conditioning: the entries the preamble was to hold (L); 0 for none", required=False),
    Field("entries", "array", "conditioning: the ids of the memory entries the preamble held, in order",
          required=False),
))


def conditioning_probe(lengths=LENGTHS) -> dict:
    return {"name": CONDITIONING, "lengths": arm_probes.parse_counts(lengths, "lengths")}


def arm_name(kind: str, length: int) -> str:
    return f"{kind}@{length}"


def arms(probe: dict) -> list[str]:
    """The arms of a probe, ``none`` first, then each kind at each length."""
    return [NONE, *(arm_name(kind, length) for kind in KINDS for length in probe["lengths"])]


def trophies(entries: list[dict], seed: int) -> dict[str, list[dict]]:
    """Per pool, the entries whose initial answer was right as far as the run knows it (the label the critic was
    shown, or a self critic's verdict: critique.engine.memory.selection.right) and whose critique parsed, in a
    seeded order."""
    pools: dict[str, list[dict]] = {}
    for entry in sorted(entries, key=lambda e: e["id"]):
        if entry.get("critique") and selection.right(entry):
            pools.setdefault(pool_of(entry.get("user")), []).append(entry)
    for pool, found in pools.items():
        random.Random(f"{CONDITIONING}-{seed}-{pool}").shuffle(found)
    return pools


def shown(entry: dict, kind: str) -> dict:
    """What a preamble shows of an entry: its question (outcomes) or its critique's lesson (procedures)."""
    if kind == OUTCOMES:
        return {"question": entry["question"]}
    return {"lesson": entry["critique"]["global_reason"]}


def arm_prompt(run, item, arm: str, ranked: list[dict]) -> tuple[agents.Prompt, dict]:
    """The arm's prompt for ``item`` and the fields of its record; ``ranked``: the item's pool's trophies."""
    if arm == NONE:
        prompt = agents.performance_prompt(ZERO_SHOT_TEMPLATE, run.task, item, run.space, [], None, "full")
        return prompt, {"preamble": NONE, "length": 0, "entries": []}
    kind, length = arm.split("@")
    held = ranked[:int(length)]
    prompt = agents.performance_prompt(TEMPLATE, run.task, item, run.space, [], None, "full",
                                       more={"preamble": kind, "entries": [shown(e, kind) for e in held]})
    return prompt, {"preamble": kind, "length": int(length), "entries": [e["id"] for e in held]}


async def conditioning(run) -> None:
    """The train stage, then every arm for every test item of ``run``'s dataset."""
    memory = await run.train_stage((TRAIN, CRITIQUE))
    ranked = trophies(memory.episodic.entries if memory.episodic is not None else [], run.config.seed)
    names = arms(run.probe)

    async def one(item) -> None:
        mine = ranked.get(pool_of(item.user), [])
        todo = [a for a in names if pkey(PROBE, a, item.user, item.id) not in run.predictions and (a == NONE or mine)]
        jobs = []
        for arm in todo:
            prompt, extra = arm_prompt(run, item, arm, mine)
            jobs.append(run.answer(PROBE, arm, item, prompt, seed=(PROBE, arm), extra=extra))
        await asyncio.gather(*jobs)

    await run.each(run.dataset.test, one, CONDITIONING)


def cost(run) -> int:
    return arm_probes.cost(run, arms(run.probe))
