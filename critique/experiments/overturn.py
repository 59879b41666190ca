"""The overturn probe (issue 16; docs/memory.md section 2): can a true note overturn a false one?

``critique probe overturn --dataset D --model M`` (manifest ``probe`` = ``{"name": "overturn"}``). For each test
item, with the suggestibility probe's zero-shot answer and its two critiques (critique.experiments.probes: the
critic told the true label, ``truth``, and a flipped one, ``lying``; the very same requests, so a suggestibility
run of the same model and data, or the response cache, answers them):

- ``truth`` and ``lying``: one critique alone, the suggestibility probe's own prompts (attribution none): Table 4's
  Acc(truth) and Acc(lying), measured again in this run (answered from that run or the cache when it exists);
- ``lying+truth`` and ``truth+lying``: both critiques in one prompt (performance_overturn.j2), the false one
  first, then the true one first;
- the same two with ``@provenance``: each critique says where it came from and how confident
  (PROVENANCE): the false one is the stored note, the true one new counter-evidence; both are "unverified",
  so the two notes differ only in where they came from.

Prediction records: stage ``probe``, strategy as above; ``notes`` (the critiques in order) and ``provenance``.
The overturn rate: how often the true note wins, ``correct`` with both notes; and among the items whose answer
with the false note alone was wrong, the share that both notes make right (critique.analysis.memory.overturn).
"""

from __future__ import annotations

import asyncio

from critique.base import records
from critique.base.records import Field
from critique.base.vocab import LYING, PROBE, TRUTH
from critique.engine import agents, parsing
from critique.engine.run_directory import pkey
from critique.experiments import probes

ALONE = (TRUTH, LYING)
PAIRS = ((LYING, TRUTH), (TRUTH, LYING))
AT = "@provenance"
PROVENANCE = {
    LYING: {"source": "your stored memory: a note written after an earlier attempt at this question",
            "confidence": "unverified"},
    TRUTH: {"source": "a new review of the earlier answer, written now, that disagrees with your stored memory",
            "confidence": "unverified"},
}


def condition_name(order: tuple[str, str], provenance: bool) -> str:
    return "+".join(order) + (AT if provenance else "")


CONDITIONS = (*ALONE, *(condition_name(o, p) for p in (False, True) for o in PAIRS))
# its predictions' fields (critique.base.records): the suggestibility probe's (its truth and lying conditions), and
# which critiques its prompt held
records.declare("overturn", probes.SUGGESTIBILITY_FIELDS + (
    Field("notes", "array", "overturn: the critiques in the prompt, in order: truth or lying", required=False),
    Field("provenance", "boolean", "overturn: each critique was shown with where it came from and how confident",
          required=False),
))


def overturn_probe() -> dict:
    return {"name": "overturn"}


async def _critique(run, item, condition: str, initial: str | None):
    """The suggestibility probe's critique of ``initial`` (truth or lying): (critique or None, text, error)."""
    label = item.answer if condition == TRUTH else probes.flipped_label(item.answer, run.space, run.config.seed,
                                                                        item.user, item.id)
    review = await run.call("probe_critique", condition, item.id, item.user,
                            agents.critic_prompt(run.task, item, initial, label), parsing.CRITIQUE_SCHEMA, "critique")
    if review.error is not None:
        return None, None, f"the {condition} critique call failed ({review.error}); rerun to retry"
    if review.context_overflow:
        return None, None, f"the {condition} critique did not fit the context"
    return parsing.parse_critique(review.text), (review.text or "").strip(), None


async def _pair(run, item, initial: str | None, order: tuple[str, str], provenance: bool) -> None:
    name = condition_name(order, provenance)
    extra = {"notes": list(order), "provenance": provenance, "initial_answer": initial or agents.NO_ANSWER}
    notes = []
    for condition in order:
        critique, text, error = await _critique(run, item, condition, initial)
        if error is not None:
            run.unanswered(PROBE, name, item, error, extra)
            return
        notes.append({"critique": critique, "text": text, "provenance": PROVENANCE[condition] if provenance else None})
    prompt = agents.prompt("performance_overturn.j2", task=run.task, question=item.question, answer_space=run.space,
                           initial_answer=initial or agents.NO_ANSWER, notes=notes)
    await run.answer(PROBE, name, item, prompt, seed=(PROBE, name), extra=extra)


async def overturn(run) -> None:
    """Every condition for every test item of ``run``'s dataset."""

    async def one(item) -> None:
        todo = [c for c in CONDITIONS if pkey(PROBE, c, item.user, item.id) not in run.predictions]
        if not todo:
            return
        initial, error = await probes._initial(run, item)
        if error is not None:
            for c in todo:
                run.unanswered(PROBE, c, item, probes.initial_failed(error))
            return
        jobs = [probes._condition(run, item, c, initial, None) for c in ALONE if c in todo]
        jobs += [_pair(run, item, initial, o, p) for p in (False, True) for o in PAIRS
                 if condition_name(o, p) in todo]
        await asyncio.gather(*jobs)

    await run.each(run.dataset.test, one, "overturn")


def cost(run) -> int:
    """Calls at most: per test item still to do, the zero-shot answer, two critiques and six answers."""
    todo = [i for i in run.dataset.test if any(pkey(PROBE, c, i.user, i.id) not in run.predictions
                                               for c in CONDITIONS)]
    return len(todo) * (1 + 2 + len(CONDITIONS))
