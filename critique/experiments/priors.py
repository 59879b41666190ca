"""The revocable-priors probe (docs/memory.md section 4, rule R5): does a note marked as a prior to drop on
contradiction get dropped when the question contradicts it?

``critique probe priors --dataset D --model M`` (manifest ``probe`` = ``{"name": "priors"}``). The train stage runs
as the study's does (a run of the same model and data, or the response cache, answers its calls). Each test item
is then asked with EP_CRIT's prompt over two memories:

- ``unmarked``: the train stage's, as it is: EP_CRIT's very request;
- ``prior``: the same entries with each stored verdict marked as a revocable prior (``prompts/<set>/prior.j2``:
  written about an earlier question, a starting assumption to drop where this question's own facts contradict
  it). The mark is written into the entry, as de-inflation's doubtful mark is: the EP templates are unchanged,
  the same entries are retrieved, and the two prompts differ in the marks alone.

Each record says what the nearest note shown asserts (``note_asserted``: the option its critique names, null
when none), whether that is this question's gold label (``note_right``) and whether the answer is it
(``followed_note``). R5 predicts the marked notes are followed less where they are wrong, so that accuracy rises
on the items whose nearest note is wrong, and little is lost where it is right: the table
(critique.analysis.memory.priors) gives both, and the marked arm against the unmarked on the same items.
"""

from __future__ import annotations

import asyncio

from critique.base import records
from critique.base.records import Field
from critique.base.vocab import CRITIQUE, EP_CRIT, PRIORS, PROBE, TRAIN
from critique.engine import question
from critique.engine.memory import selection
from critique.engine.methods import method, prompt_over
from critique.engine.run_directory import pkey
from critique.experiments import arm_probes

UNMARKED, PRIOR = "unmarked", "prior"
ARMS = (UNMARKED, PRIOR)
TEMPLATE = "prior.j2"

records.declare(PRIORS, (
    Field("prior", "boolean", "priors: every note shown was marked as a revocable prior (prior.j2)", required=False),
    Field("note_asserted", "string|null", "priors: the option the nearest note shown asserts (its critique's "
          "correct_answer, strict check); null when it names none or no note was shown", required=False),
    Field("note_right", "boolean|null", "priors: that option is this question's gold label; null without one",
          required=False),
    Field("followed_note", "boolean|null", "priors: the answer is that option; null without one", required=False),
))


def priors_probe() -> dict:
    return {"name": PRIORS}


def marked(entry: dict, prompt_set: str) -> dict:
    """The entry with its stored verdict marked as a revocable prior (prior.j2), and ``prior: true``."""
    from critique.engine import prompts

    critique = dict(entry["critique"])
    critique["correct_answer"] = prompts.render(TEMPLATE, prompt_set,
                                                assertion=str(critique.get("correct_answer") or "")).strip()
    return {**entry, "critique": critique, "prior": True}


def marked_memory(memory, prompt_set: str):
    """``memory`` (critique.engine.memory.value.Memory) with every episodic entry marked, the same vectors."""
    from dataclasses import replace

    from critique.engine.memory.episodic import EpisodicMemory

    episodic = memory.episodic
    if episodic is None or not episodic.entries:
        return memory
    return replace(memory, episodic=EpisodicMemory([marked(e, prompt_set) for e in episodic.entries],
                                                   episodic.vectors()))


def nearest(shown) -> dict | None:
    """The most similar entry shown (the first, when no similarity was logged)."""
    if not shown:
        return None
    scores = list(shown.scores) if getattr(shown, "scores", None) is not None else [0.0] * len(shown)
    return shown[max(range(len(shown)), key=lambda n: (scores[n], -n))]


def _fields(item, shown, prior: bool):
    note = nearest(shown)
    asserted = note.get("asserted") if note is not None else None

    def fields(outcome: dict) -> dict:
        followed = None if asserted is None else (not outcome.get("parse_failed") and outcome.get("answer") == asserted)
        return {**selection.logged(shown), "prior": prior, "note_asserted": asserted,
                "note_right": None if asserted is None else asserted == item.answer, "followed_note": followed}

    return fields


async def priors(run) -> None:
    """The train stage, then both arms for every test item of ``run``'s dataset."""
    memory = await run.train_stage((TRAIN, CRITIQUE))
    memories = {UNMARKED: memory, PRIOR: marked_memory(memory, run.config.prompts)}
    test = run.dataset.test
    vectors = dict(zip(((i.user, i.id) for i in test), run.encoder.encode([i.question for i in test])))

    async def ask(item, arm: str) -> None:
        found = prompt_over(method(EP_CRIT), run, item, vectors[(item.user, item.id)], item.id, memories[arm])
        if found is None:
            run.unanswered(PROBE, arm, item, question.missing(run, EP_CRIT, item, memories[arm]))
            return
        prompt, shown = found
        await run.answer(PROBE, arm, item, prompt, seed=(PROBE, arm), retrieved=[e["id"] for e in shown],
                         extra=_fields(item, shown, arm == PRIOR))

    async def one(item) -> None:
        await asyncio.gather(*(ask(item, arm) for arm in ARMS
                               if pkey(PROBE, arm, item.user, item.id) not in run.predictions))

    await run.each(test, one, PRIORS)


def cost(run) -> int:
    return arm_probes.cost(run, ARMS)
