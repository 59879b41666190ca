"""The critique stage: the critic critiques each train item's initial answer against its label (the gold
label, unless ``--critic`` says otherwise: below), and each parsed critique becomes an episodic memory entry.

The assertion check is strict (critique.base.assertion.asserted_option): an entry records the option
its ``correct_answer`` names as the answer (``asserted``, null when it names none) and
``assertion_mismatch`` (``asserted`` is not the label the critic was shown). What enters memory when it
mismatches is the run's ``on_mismatch`` (``--on-mismatch``):

- ``keep`` (default, as the paper): the entry enters memory, flagged.
- ``drop``: it does not; it is written to ``memory/dropped.jsonl`` instead, and the run says how many.
- ``recritique``: the critic is asked once more (call stage ``recritique``: the first exchange, then
  the follow-up ``critic_retry.j2``, so a distinct request). The entry keeps the second critique when
  its assertion names the label shown, else the first (flagged, as ``keep``); its ``recritique``
  field holds both critiques and which was kept.

A critique that does not parse (or whose call failed) makes no entry, whatever ``on_mismatch``. Of those that
would enter, the run's ``admission`` (``--admission instruction``: critique.engine.memory.admission) keeps out
the ones whose reasons carry no instruction, written to ``memory/rejected.jsonl``.

What the critic is shown of the label is the run's ``critic`` (``--critic``; ``shown_labels``):

- ``gold`` (default, the study): the gold label.
- ``noisy:R``: the gold label, but for a seeded round(R * n) of the n train items (ranked by the run's
  seed, user and item id) a seeded other option of the answer space; the entry says which
  (``label_flipped``), and the assertion check and ``--on-mismatch`` hold the critic to the label it was
  shown. ``noisy:0`` is ``gold`` (critique.base.config.canonical_critic): the same run.
- ``self``: no label. The critic gets ``critic_self.j2`` (the question and the answer only) and states its
  own ``verdict`` (right or wrong) and the answer it believes (``believed``); there is nothing to hold its
  assertion to (``assertion_mismatch`` null, every parsed critique enters memory). With ``--label-budget
  F`` the items of a nested seeded fraction F (critique.datasets.subsets.train_subset) get the gold label
  as with ``gold``.

The gold label stays in each entry (``gold``) for measuring only: no prompt shows it unless the critic is
shown it. An item without one (a Learner's question, ``Learner.learn(q, "self")``: its answer is "") gets
``gold`` null, and its truth is unknown (critique.base.truth.initial_right). EP_LABEL shows the labels the
run has (``ep_labels``): the shown label, else the believed answer.
"""

from __future__ import annotations

import sys

from critique.base import records, rundir
from critique.base.config import noise_rate
from critique.base.vocab import RECRITIQUE  # the stage of the second critique call
from critique.engine import agents, parsing
from critique.engine.memory.episodic import entry_id

DROPPED = "dropped.jsonl"  # memory/: entries left out by --on-mismatch drop
INITIAL = object()  # critique_item's default answer: the item's initial answer of the train stage


def _part(result, space: list[str], label: str) -> dict:
    """One critique call's outcome: the critique (None: no valid reply), its assertion (checked against the
    ``label`` the critic was shown), its call."""
    critique = parsing.parse_critique(result.text) if result.error is None else None
    asserted = parsing.asserted_option(critique["correct_answer"], space) if critique else None
    return {"critique": critique, "asserted": asserted, "assertion_mismatch": asserted != label,
            "timeout": result.timeout, "request_hash": result.request_hash, "error": result.error}


def retry_prompt(task, first: agents.Prompt, reply: str, label: str, asserted: str | None,
                 space: list[str]) -> agents.Prompt:
    """The recritique request: the first critic exchange, then a follow-up asking again (the template's
    ``gold`` is the ``label`` the critic was shown)."""
    follow = agents.prompt("critic_retry.j2", task=task, gold=label, asserted=asserted, answer_space=space)
    return agents.Prompt(follow.template, follow.template_hash,
                         [*first.messages, {"role": "assistant", "content": reply or ""}, *follow.messages])


def flipped_ids(items: list, rate: float, seed: int) -> set[str]:
    """Entry ids of the round(rate * n) items (round half up) first in the seeded order of (seed, user, id)."""
    from critique.datasets.subsets import seeded_rank

    ordered = sorted(items, key=lambda i: seeded_rank(seed, i.user, i.id, "noisy"))
    return {entry_id(i) for i in ordered[:int(rate * len(items) + 0.5)]}


def shown_labels(items: list, critic: str, label_budget: float | None, seed: int,
                 space: list[str]) -> dict[str, dict]:
    """Entry id -> {label: what the critic is shown (None: no label), flipped: a noisy critic flipped it},
    for a canonical ``critic`` (critique.base.config.canonical_critic)."""
    from critique.datasets.subsets import train_subset

    if critic == "self":
        labelled = {entry_id(i) for i in train_subset(items, label_budget, seed)} if label_budget else set()
        return {entry_id(i): {"label": i.answer if entry_id(i) in labelled else None, "flipped": False}
                for i in items}
    flipped = flipped_ids(items, noise_rate(critic), seed)
    return {entry_id(i): {"label": parsing.wrong_answer(i.answer, space, "noisy", seed, i.user or "", i.id)
                          if entry_id(i) in flipped else i.answer, "flipped": entry_id(i) in flipped}
            for i in items}


def ep_label_shows(critic: str, label_budget: float | None) -> str:
    """The manifest's ``ep_label``: what EP_LABEL shows as the label (critique.base.records)."""
    if critic == "self":
        return "budget" if label_budget else "believed"
    return "noisy" if critic.startswith("noisy:") else "gold"


def ep_labels(run, entries: list[dict]) -> dict[str, str]:
    """Entry id -> the label EP_LABEL shows for each train item that has one: the label the critic was
    shown, else (self) the answer the critic believes; an item with neither is left out of EP_LABEL."""
    shown = shown_labels(run.dataset.train, run.config.critic, run.config.label_budget, run.config.seed, run.space)
    believed = {e["id"]: e.get("believed") for e in entries}
    out = {}
    for key, seen in shown.items():
        label = seen["label"] if seen["label"] is not None else believed.get(key)
        if label is not None:
            out[key] = label
    return out


def self_prompt(task, item, answer: str | None, space: list[str]) -> agents.Prompt:
    """The self critic's request: the question and the initial answer; no label."""
    return agents.prompt("critic_self.j2", task=task, question=item.question, answer=answer or agents.NO_ANSWER,
                         answer_space=space)


def _entry(run, item, answer, prompt, kept: dict, seen: dict, **more) -> dict:
    return records.make("memory_entry", **{
        "id": entry_id(item), "item_id": item.id, "user": item.user, "question": item.question,
        "initial_answer": answer or agents.NO_ANSWER, "gold": item.answer or None, "critique": kept["critique"],
        "asserted": kept["asserted"], "assertion_mismatch": kept["assertion_mismatch"], "timeout": kept["timeout"],
        "model": run.config.model, "template_hash": prompt.template_hash, "run_id": run.run_id,
        "request_hash": kept["request_hash"], "label": seen["label"], "label_flipped": seen["flipped"],
        "verdict": None, "believed": None, **more})


def train_stage_ask(run, item):
    """``ask`` of a critique as the train stage asks it: the run's step, no strategy."""
    async def ask(stage: str, prompt: agents.Prompt, schema: dict, name: str):
        return await run.call(stage, None, item.id, item.user, prompt, schema, name)

    return ask


async def self_critique(run, item, seen: dict, answer: str | None, stage: str = "critique",
                        ask=None) -> dict | None:
    """A critique of ``answer`` without a label: the entry (its verdict and believed answer), or None when none
    parsed (``ask``: as critique_item's)."""
    prompt = self_prompt(run.task, item, answer, run.space)
    result = await (ask or train_stage_ask(run, item))(stage, prompt, parsing.self_critique_schema(run.space),
                                                    "critique")
    judged = parsing.parse_self_critique(result.text, run.space) if result and result.error is None else None
    if judged is None:
        return None
    critique, verdict, believed = judged
    kept = {"critique": critique, "asserted": parsing.asserted_option(critique["correct_answer"], run.space),
            "assertion_mismatch": None, "timeout": result.timeout, "request_hash": result.request_hash}
    return _entry(run, item, answer, prompt, kept, seen, verdict=verdict, believed=believed)


async def critique_item(run, item, seen: dict | None = None, answer=INITIAL, stage: str = "critique",
                        ask=None) -> tuple[dict | None, bool]:
    """(the item's entry, or None when no critique parsed; whether it enters memory). ``seen``: what the
    critic is shown of the label (``shown_labels``; default: the gold label); ``answer``: the answer critiqued
    (default: the item's initial answer); ``stage``: the stage of the critique's call record; ``ask(stage,
    prompt, schema, name)``: each of its calls (default: the run's step, as the train stage asks it), None when
    the stage asking has stopped (then no critique)."""
    seen = seen or {"label": item.answer, "flipped": False}
    answer = run.initial_answer(item) if answer is INITIAL else answer
    ask = ask or train_stage_ask(run, item)
    if seen["label"] is None:
        entry = await self_critique(run, item, seen, answer, stage, ask)
        return entry, entry is not None
    label = seen["label"]
    prompt = agents.critic_prompt(run.task, item, answer, label)
    result = await ask(stage, prompt, parsing.CRITIQUE_SCHEMA, "critique")
    if result is None:  # the stage asking has stopped
        return None, False
    first = _part(result, run.space, label)
    if first["critique"] is None:
        return None, False
    kept, extra = first, {}
    if first["assertion_mismatch"] and run.config.on_mismatch == RECRITIQUE:
        again = retry_prompt(run.task, prompt, result.text, label, first["asserted"], run.space)
        retried = await ask(RECRITIQUE, again, parsing.CRITIQUE_SCHEMA, "critique")
        if retried is None:  # the stage asking stopped before the item's critique was done
            return None, False
        second = _part(retried, run.space, label)
        agreed = second["critique"] is not None and not second["assertion_mismatch"]
        kept = second if agreed else first
        extra = {"recritique": {"first": first, "second": second, "kept": "second" if agreed else "first"}}
    entry = _entry(run, item, answer, prompt, kept, seen, **extra)
    return entry, not (kept["assertion_mismatch"] and run.config.on_mismatch == "drop")


def _admitted(run, entries: list[dict]) -> list[dict]:
    """The entries the run's --admission lets into memory; the others written to memory/rejected.jsonl, and said."""
    from critique.engine.memory import admission

    if run.config.admission == admission.ALL:
        return entries
    kept, rejected = admission.admitted(run.config.admission, entries)
    admission.save(run.out / rundir.MEMORY, rejected)
    print(f"critique: --admission {run.config.admission}: {len(rejected)} of {len(entries)} critiques kept out of "
          f"memory (no instruction in their reasons; {rundir.MEMORY}/{admission.REJECTED})", file=sys.stderr)
    return kept


def _say_missing(train: list, parsed: list, kept: list[dict], refused: int = 0) -> None:
    """Say on stderr how many train items have no critique in memory (``refused``: those --admission kept out),
    and which pools are left with none (their critique strategies answer with zero_shot's prompt:
    critique.engine.performance.empty_pool)."""
    from critique.engine.memory.episodic import pool_of

    if len(kept) == len(train):
        return
    why = [f"{refused} kept out by --admission"] if refused else []
    if len(parsed) < len(train):
        why.append("the others' call failed, or their reply was not a critique: calls.jsonl, stage critique")
    print(f"critique: {len(parsed)} of {len(train)} critiques parsed and {len(kept)} entered memory"
          + (f" ({'; '.join(why)})" if why else ""), file=sys.stderr)
    empty = sorted({pool_of(i.user) for i in train} - {pool_of(e.get("user")) for e in kept})
    if empty:
        shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        print(f"critique: warning: no critique in memory for {'pool' if len(empty) == 1 else 'pools'} {shown}: "
              "EP_CRIT, SEM_CRIT and EP+SEM_CRIT answer those questions with zero_shot's prompt", file=sys.stderr)


async def critiques(run) -> list[dict]:
    """The entries that enter memory, in train order (``run.each`` over the train items); with
    ``drop``, the others are written to memory/dropped.jsonl."""
    found: dict[str, tuple[dict, bool]] = {}
    train = run.dataset.train
    shown = shown_labels(train, run.config.critic, run.config.label_budget, run.config.seed, run.space)

    async def one(item) -> None:
        entry, keep = await critique_item(run, item, shown[entry_id(item)])
        if entry is not None:
            found[entry["id"]] = (entry, keep)

    await run.each(train, one, "critiques")
    ordered = [found[entry_id(i)] for i in train if entry_id(i) in found]
    allowed = [entry for entry, keep in ordered if keep]
    kept = _admitted(run, allowed)
    _say_critic(run, shown)
    _say_missing(train, ordered, kept, len(allowed) - len(kept))
    mode = run.config.on_mismatch
    if mode == "drop":
        dropped = [entry for entry, keep in ordered if not keep]
        rundir.write_jsonl_atomic(run.out / rundir.MEMORY / DROPPED, dropped)
        print(f"critique: --on-mismatch drop: {len(dropped)} of {len(ordered)} critiques left out of memory "
              f"(their assertion does not name the label the critic was shown; {rundir.MEMORY}/{DROPPED})",
              file=sys.stderr)
    elif mode == RECRITIQUE:
        asked = [e for e, _ in ordered if "recritique" in e]
        fixed = sum(e["recritique"]["kept"] == "second" for e in asked)
        print(f"critique: --on-mismatch recritique: {len(asked)} of {len(ordered)} critiques did not name the label "
              f"the critic was shown and were asked again; {fixed} now do (kept), {len(asked) - fixed} keep the first",
              file=sys.stderr)
    return kept


def _say_critic(run, shown: dict[str, dict]) -> None:
    """One line on stderr when the critic was not shown every gold label."""
    critic, n = run.config.critic, len(shown)
    if critic.startswith("noisy:"):
        flipped = sum(s["flipped"] for s in shown.values())
        print(f"critique: --critic {critic}: {flipped} of {n} train labels flipped (seed {run.config.seed}) before "
              "the critic saw them (memory entries' label_flipped)", file=sys.stderr)
    elif critic == "self":
        unlabelled = sum(s["label"] is None for s in shown.values())
        print(f"critique: --critic self: {unlabelled} of {n} train items critiqued without a label (the critic's "
              f"own verdict and believed answer; EP_LABEL shows that answer as the label)", file=sys.stderr)
