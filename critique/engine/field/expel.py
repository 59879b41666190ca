"""ExpeL, experiential learners (Zhao et al. 2023, arXiv 2308.10144; LeapLabTHU/ExpeL). Offline over the train split
of each pool, with its labels:

1. experience: each train question is tried up to 1 + RETRIES times (Reflexion): after a wrong answer the agent is
   told it failed (not the answer), reflects, and tries again with its reflections; every trial is kept, as a
   success or a failure;
2. insights (critique.engine.field.insights): for each question with a success and a failure, each success is
   compared with each failure, and the successes of all questions are read in seeded chunks of CHUNK; each
   extraction names operations on the rule list (ADD, EDIT, REMOVE, AGREE).

A test question is answered with the rules, most important first, and the successful trials of the K most similar
train questions (the shortest success of each), the question itself never among them. The memory's notes are
the rules and the successful trials a prompt may show (``trial:ID``), each with the train items it rests on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from critique.datasets.subsets import seeded_rank
from critique.engine import parsing
from critique.engine.field import insights, memory
from critique.engine.field.offline import Offline, calls_left, method_prompt, reasoned_answer
from critique.engine.memory.episodic import Retrieved, pool_of
from critique.engine.method_memory import Saved
from critique.engine.method_settings import Setting, value
from critique.engine.methods import Method, register

RETRIES = 3  # Reflexion retries after a failed trial (max_reflection_depth)
SETTINGS = (Setting("retries", RETRIES, "Reflexion retries after a failed trial (max_reflection_depth)", low=0),)
CHUNK = 8  # successful trials per all-success extraction (success_critique_num)
TEXT_CHARS = 600
ATTEMPT, REFLECT, COMPARE, SUCCESS = "expel_attempt.j2", "expel_reflect.j2", "expel_compare.j2", "expel_success.j2"
REFLECTION_SCHEMA = {"type": "object", "properties": {"reflection": {"type": "string", "maxLength": TEXT_CHARS}},
                     "required": ["reflection"], "additionalProperties": False}
OPERATIONS_SCHEMA = {"type": "object", "properties": {"operations": {"type": "array", "maxItems": 4, "items": {
    "type": "string", "maxLength": TEXT_CHARS}}}, "required": ["operations"], "additionalProperties": False}


@dataclass
class Pool:
    insights: insights.Insights
    trials: dict  # train item id -> [(trial, succeeded)], in order
    items: list  # the pool's train items


@dataclass
class Learned:
    pools: dict  # pool -> Pool
    offline: dict  # pool -> Offline
    rule_vectors: dict  # pool -> its rules' vectors
    examples: dict  # pool -> (the items with a success, their questions' vectors)
    saved: Saved  # memory/METHOD.json (the engine writes it)


class ExpeL(Method):
    name = "expel"
    settings = SETTINGS

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def learning_calls(self, run) -> tuple[int, str]:
        # its trials, a reflection after each failed one, a comparison of each failed one with its success
        per = 1 + 3 * value(run, self.name, "retries")
        pools: dict = {}
        for item in run.dataset.train:
            pools[pool_of(item.user)] = pools.get(pool_of(item.user), 0) + 1
        extractions = sum(-(-n // CHUNK) for n in pools.values())  # each pool's successes, CHUNK at a time
        return calls_left(run, self.name, per * len(run.dataset.train) + extractions,
                          f"{per} per train item and one per {CHUNK} successes of each pool")

    def schema(self, run) -> dict:
        return reasoned_answer(run.space)

    async def learn(self, run) -> Learned:
        pools, offline = await memory.each_pool(run, self.name, lambda items, stage: self._pool(run, items, stage))
        rules = {pool: p.insights.notes() for pool, p in pools.items()}
        examples = {}
        for pool, p in pools.items():
            shown = [i for i in p.items if _success(p.trials.get(i.id, []))]
            examples[pool] = (shown, np.asarray(run.encoder.encode([i.question for i in shown])) if shown else None)
        notes = {pool: rules[pool] + [_trial_note(i, pools[pool].trials[i.id]) for i in examples[pool][0]]
                 for pool in pools}  # the rules, then each successful trial a prompt may show
        return Learned(pools, offline, {p: memory.encoded(run, n) for p, n in rules.items()}, examples,
                       Saved(notes, offline, {"trials": {pool: p.trials for pool, p in pools.items()}}))

    async def _pool(self, run, items: list, offline: Offline) -> Pool:
        trials = {}
        for item in items:  # one after another: where a budget stops the stage does not depend on timing
            trials[item.id] = await self._gather(run, item, offline)
            if offline.stopped is not None:
                return Pool(insights.Insights(), trials, items)
        rules = insights.Insights()
        for item in items:
            tried = trials[item.id]
            for success in (t for t, ok in tried if ok):
                for failure in (t for t, ok in tried if not ok):
                    await self._extract(run, offline, rules, [item.id], COMPARE, question=item.question,
                                        success=success, failure=failure)
        ranked = sorted((i for i in items if _success(trials[i.id])),
                        key=lambda i: seeded_rank(run.config.seed, i.user, i.id, salt="expel"))
        for start in range(0, len(ranked), CHUNK):
            chunk = ranked[start:start + CHUNK]
            await self._extract(run, offline, rules, [i.id for i in chunk], SUCCESS,
                                trials=[{**_success(trials[i.id]), "question": i.question} for i in chunk])
        return Pool(rules, trials, items)

    async def _gather(self, run, item, offline: Offline) -> list[tuple[dict, bool]]:
        """The trials of one train question: until one is right, or 1 + its retries (setting ``retries``)."""
        retries = value(run, self.name, "retries")
        tried, reflections = [], []
        for _ in range(1 + retries):
            prompt = method_prompt(ATTEMPT, rules=[], examples=[], reflections=reflections, task=run.task,
                                   question=item.question, answer_space=run.space)
            result = await offline.ask("expel_attempt", item, prompt, self.schema(run), "answer")
            reply = offline.read(result, item)
            if reply is None:
                break
            trial = {"reasoning": str(reply.get("reasoning", "")),
                     "answer": parsing.extract_answer(result.text, run.space) or "(no valid answer)"}
            tried.append((trial, trial["answer"] == item.answer))
            if tried[-1][1] or len(tried) > retries:
                break
            reflected = offline.read(await offline.ask(
                "expel_reflect", item, method_prompt(REFLECT, task=run.task, question=item.question, **trial),
                REFLECTION_SCHEMA, "reflection"), item)
            if reflected is None:
                break
            reflections.append(str(reflected.get("reflection", "")))
        return tried

    async def _extract(self, run, offline: Offline, rules: insights.Insights, sources: list[str], template: str,
                       **values) -> None:
        prompt = method_prompt(template, task=run.task, rules=rules.texts(), full=rules.full, **values)
        reply = offline.read(await offline.ask("expel_insight", None, prompt, OPERATIONS_SCHEMA, "operations"),
                             sources[0])
        if reply is not None and isinstance(reply.get("operations"), list):
            rules.update(insights.parse(reply["operations"]), sources)

    def prompt(self, run, item, vector, exclude: str | None = None):
        found = memory.ready(run, self.name, item)
        if found is None:
            return None
        learned, pool = found
        rules = learned.pools[pool].insights.notes()
        nearest, similarity = _nearest(run, learned, pool, vector, exclude)
        shown_items = learned.examples[pool][0]
        found = memory.shown(rules, learned.rule_vectors[pool], vector)
        return self._attempt(run, learned, pool, item, rules, nearest), Retrieved(
            list(found) + [{"id": f"trial:{shown_items[n].id}"} for n in nearest],
            list(found.scores) + [float(similarity[n]) for n in nearest])

    def without(self, run, item, vector, note: str):
        """The test prompt of ``item`` with rule or trial ``note`` left out (the others as they were shown)."""
        learned, pool = memory.ready(run, self.name, item)
        rules = [r for r in learned.pools[pool].insights.notes() if r["id"] != note]
        shown_items = learned.examples[pool][0]
        nearest = [n for n in _nearest(run, learned, pool, vector, item.id)[0] if f"trial:{shown_items[n].id}" != note]
        return self._attempt(run, learned, pool, item, rules, nearest)

    def _attempt(self, run, learned, pool: str, item, rules: list[dict], nearest: list[int]):
        """The attempt prompt of a test question: the rules, then the successful trials ``nearest``."""
        shown_items, trials = learned.examples[pool][0], learned.pools[pool].trials
        examples = [{**_success(trials[shown_items[n].id]), "question": shown_items[n].question} for n in nearest]
        return method_prompt(ATTEMPT, rules=[r["text"] for r in rules], examples=examples, reflections=[],
                             task=run.task, question=item.question, answer_space=run.space)

    def missing(self, run, item) -> str:
        return memory.not_ready(run, self.name, item)


def _nearest(run, learned, pool: str, vector, exclude: str | None) -> tuple[list[int], np.ndarray]:
    """The K successful trials nearest to the question (never of item ``exclude``), and every trial's similarity."""
    shown_items, vectors = learned.examples[pool]
    similarity = vectors @ np.asarray(vector) if shown_items else np.zeros(0)
    order = np.argsort(-similarity, kind="stable")
    return [n for n in order if shown_items[n].id != exclude][:run.config.k], similarity


def _trial_note(item, tried: list) -> dict:
    """A successful trial as a note of the memory: the question, the answer and the reasoning a prompt shows."""
    trial = _success(tried)
    return {"id": f"trial:{item.id}", "text": f"{item.question} -> {trial['answer']}: {trial['reasoning']}",
            "sources": [item.id]}


def _success(tried: list) -> dict | None:
    """The shortest successful trial of a question (ExpeL's few-shot choice), or None."""
    wins = [t for t, ok in tried if ok]
    return min(wins, key=lambda t: len(t["reasoning"])) if wins else None


register(ExpeL())
