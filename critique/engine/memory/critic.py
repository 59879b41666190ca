"""The critique stage: the critic critiques each train item's initial answer against its gold label,
and each parsed critique becomes an episodic memory entry.

The assertion check is strict (critique.base.assertion.asserted_option): an entry records the option
its ``correct_answer`` names as the answer (``asserted``, null when it names none) and
``assertion_mismatch`` (``asserted`` is not the gold label). What enters memory when it mismatches is
the run's ``on_mismatch`` (``--on-mismatch``):

- ``keep`` (default, as the paper): the entry enters memory, flagged.
- ``drop``: it does not; it is written to ``memory/dropped.jsonl`` instead, and the run says how many.
- ``recritique``: the critic is asked once more (call stage ``recritique``: the first exchange, then
  the follow-up ``critic_retry.j2``, so a distinct request). The entry keeps the second critique when
  its assertion names the gold label, else the first (flagged, as ``keep``); its ``recritique``
  field holds both critiques and which was kept.

A critique that does not parse (or whose call failed) makes no entry, whatever ``on_mismatch``; the
label baseline EP_LABEL does not depend on the critic at all (critique.engine.pipeline).
"""

from __future__ import annotations

import sys

from critique.base import records, rundir
from critique.base.vocab import RECRITIQUE  # the stage of the second critique call
from critique.engine import agents, parsing
from critique.engine.memory.episodic import entry_id

DROPPED = "dropped.jsonl"  # memory/: entries left out by --on-mismatch drop


def _part(result, space: list[str], gold: str) -> dict:
    """One critique call's outcome: the critique (None: no valid reply), its assertion, its call."""
    critique = parsing.parse_critique(result.text) if result.error is None else None
    asserted = parsing.asserted_option(critique["correct_answer"], space) if critique else None
    return {"critique": critique, "asserted": asserted, "assertion_mismatch": asserted != gold,
            "timeout": result.timeout, "request_hash": result.request_hash, "error": result.error}


def retry_prompt(task, first: agents.Prompt, reply: str, gold: str, asserted: str | None,
                 space: list[str]) -> agents.Prompt:
    """The recritique request: the first critic exchange, then a follow-up asking again."""
    follow = agents.prompt("critic_retry.j2", task=task, gold=gold, asserted=asserted, answer_space=space)
    return agents.Prompt(follow.template, follow.template_hash,
                         [*first.messages, {"role": "assistant", "content": reply or ""}, *follow.messages])


async def critique_item(run, item) -> tuple[dict | None, bool]:
    """(the item's entry, or None when no critique parsed; whether it enters memory)."""
    answer = run.initial_answer(item)
    prompt = agents.critic_prompt(run.task, item, answer, item.answer)
    result = await run.call("critique", None, item.id, item.user, prompt, parsing.CRITIQUE_SCHEMA, "critique")
    first = _part(result, run.space, item.answer)
    if first["critique"] is None:
        return None, False
    kept, extra = first, {}
    if first["assertion_mismatch"] and run.config.on_mismatch == RECRITIQUE:
        again = retry_prompt(run.task, prompt, result.text, item.answer, first["asserted"], run.space)
        second = _part(await run.call(RECRITIQUE, None, item.id, item.user, again, parsing.CRITIQUE_SCHEMA,
                                      "critique"), run.space, item.answer)
        agreed = second["critique"] is not None and not second["assertion_mismatch"]
        kept = second if agreed else first
        extra = {"recritique": {"first": first, "second": second, "kept": "second" if agreed else "first"}}
    entry = records.make("memory_entry", **{
        "id": entry_id(item), "item_id": item.id, "user": item.user, "question": item.question,
        "initial_answer": answer or agents.NO_ANSWER, "gold": item.answer, "critique": kept["critique"],
        "asserted": kept["asserted"], "assertion_mismatch": kept["assertion_mismatch"], "timeout": kept["timeout"],
        "model": run.config.model, "template_hash": prompt.template_hash, "run_id": run.run_id,
        "request_hash": kept["request_hash"], **extra})
    return entry, not (kept["assertion_mismatch"] and run.config.on_mismatch == "drop")


async def critiques(run) -> list[dict]:
    """The entries that enter memory, in train order (``run.each`` over the train items); with
    ``drop``, the others are written to memory/dropped.jsonl."""
    found: dict[str, tuple[dict, bool]] = {}

    async def one(item) -> None:
        entry, keep = await critique_item(run, item)
        if entry is not None:
            found[entry["id"]] = (entry, keep)

    await run.each(run.dataset.train, one, "critiques")
    ordered = [found[entry_id(i)] for i in run.dataset.train if entry_id(i) in found]
    kept = [entry for entry, keep in ordered if keep]
    mode = run.config.on_mismatch
    if mode == "drop":
        dropped = [entry for entry, keep in ordered if not keep]
        rundir.write_jsonl_atomic(run.out / rundir.MEMORY / DROPPED, dropped)
        print(f"critique: --on-mismatch drop: {len(dropped)} of {len(ordered)} critiques left out of memory "
              f"(their assertion does not name the gold label; {rundir.MEMORY}/{DROPPED})", file=sys.stderr)
    elif mode == RECRITIQUE:
        asked = [e for e, _ in ordered if "recritique" in e]
        fixed = sum(e["recritique"]["kept"] == "second" for e in asked)
        print(f"critique: --on-mismatch recritique: {len(asked)} of {len(ordered)} critiques did not name the gold "
              f"label and were asked again; {fixed} now do (kept), {len(asked) - fixed} keep the first",
              file=sys.stderr)
    return kept
