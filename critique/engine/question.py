"""The one test-question step: a memory method's prompt for one question, asked through ``Run.answer``, or the
record of a question its memory cannot answer yet. The run's test stage, the Learner's predict and evaluate, the
field's online methods and the stream all ask a test question here; what differs between them is an argument.

- ``memory``: the critique memory the five strategies show (critique.engine.memory.value.Memory: the train
  stage's, a Learner's, a de-inflation arm's; critique.engine.methods.prompt_over); a method with its own memory
  (``run.learned``) needs none;
- ``found``: the prompt and the entries it shows, when the caller made them (an online method's prompt over its
  notes as they stand, the stream's over its notes); default: the method's ``prompt`` over ``memory``;
- ``exclude``: an item id whose entry is never shown (default: the question's own; None shows every entry: a
  Learner's predict, whose question is new);
- ``stage``, ``seed``, ``policy``, ``judge``, ``keep_same``, ``extra``, ``experiment``: as ``Run.answer`` takes
  them (``seed`` default: the strategy's name; ``extra`` adds to the fields of the entries shown).

A question with no prompt (the method's memory is missing for its pool) is recorded by ``Run.unanswered`` with the
method's reason (``missing``, else the run's, read from ``memory``); a labelled one gets the seeded wrong option a
parse failure gets, so that it counts wrong exactly as an unparseable reply does.
"""

from __future__ import annotations

from critique.base.vocab import TEST
from critique.engine import parsing
from critique.engine.memory import selection
from critique.engine.memory.value import Memory
from critique.engine.methods import hook, method, prompt_over
from critique.engine.policy import SHARED, Policy

_OWN = object()  # exclude's default: the question's own id


async def ask(run, name: str, item, vector=None, *, memory: Memory | None = None, found=None, exclude=_OWN,
              stage: str = TEST, seed: tuple | None = None, policy: Policy = SHARED, judge=None,
              keep_same: bool = False, extra: dict | None = None, experiment: str | None = None) -> dict:
    """Ask test question ``item`` with memory method ``name`` (``vector``: its question's embedding); returns its
    prediction record. See the module's docstring for the arguments."""
    if found is None:
        found = prompt_over(method(name), run, item, vector, item.id if exclude is _OWN else exclude, memory)
    if found is None:
        return run.unanswered(stage, name, item, missing(run, name, item, memory), answer=_wrong(run, name, item))
    prompt, shown = found
    schema = hook(method(name), "schema")
    return await run.answer(stage, name, item, prompt, seed=(name,) if seed is None else seed,
                            retrieved=[e["id"] for e in shown], extra={**selection.logged(shown), **(extra or {})},
                            policy=policy, schema=schema(run) if schema else None, judge=judge, keep_same=keep_same,
                            experiment=experiment)


def missing(run, name: str, item, memory: Memory | None) -> str:
    """Why method ``name`` has no prompt for ``item``: the method's own reason, else the run's (no semantic memory
    for the item's pool in ``memory``)."""
    own = hook(method(name), "missing")
    return own(run, item) if own else run.no_memory(item, memory)


def _wrong(run, name: str, item) -> str | None:
    """The answer recorded for a labelled question that was not asked: a seeded wrong option (None unlabelled)."""
    return parsing.wrong_answer(item.answer, run.space, item.user, item.id, name) if item.answer else None
