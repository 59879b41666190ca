"""The critique strategies on a budget: ``EP_CRIT:budget``, ``SEM_CRIT:budget`` and ``EP+SEM_CRIT:budget``, each
the strategy's own prompt over a critique memory whose train stage --train-budget limits as it limits the field's
methods' offline stages (critique.engine.field.offline), so that they all compare at one cost.

The offline stage walks each pool's train items in train order and asks, for each, the very requests of the
study's train stage: the initial answer (zero_shot's prompt), then its critique (critique.engine.memory.critic,
under the run's --critic and --on-mismatch). A request the shared train stage (or another variant) already asked
is answered from the run's log, so it costs no second call, but its tokens count toward the variant's, as every
request of a method's stage does. The walk stops once the budget is spent; a SEM variant then asks the summary
of the critiques it kept (critique.engine.memory.semantic, as the train stage does), its tokens kept back from the
walk (``reserve``: the summary prompts' tokens, counted with the model's tokenizer, and for each call the longest
reply the summary schema allows, ``advice_reply``), so that no stage passes its budget by more than one call: a
critique whose summary would no longer fit is left out (its memory's ``skipped`` says so). The memory is the
episodic entries of the items the walk kept and, for a SEM variant, that advice; a test question is answered
with the strategy's prompt over it (critique.engine.performance). A budget that reaches every train item gives
the strategy's own memory, prompts and answers.

Its calls are logged under stages of its own (STAGES: ``budget_train_predict``, ``budget_critique``,
``budget_recritique``, ``budget_summary``) with the variant's name as strategy, so the tables that count the
shared train stage's cost (Table 5, the methods table's critique strategies) never count them."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from critique.base.reply_bounds import FIELD_CHARS, MAX_ADVICE_LINES
from critique.base.vocab import BUDGETED, CRITIQUE, CRITIQUE_STRATEGIES, RECRITIQUE, SUMMARY, TRAIN
from critique.engine import agents, performance
from critique.engine.field import memory
from critique.engine.field.offline import BUDGET, Offline, calls_left
from critique.engine.memory import critic
from critique.engine.memory.episodic import EpisodicMemory, Retrieved, entry_id
from critique.engine.memory.value import Memory
from critique.engine.method_memory import Saved
from critique.engine.methods import Method, register
from critique.engine.strategies import STRATEGIES
from critique.llm.client import LLMResult

STAGES = {stage: f"budget_{stage}" for stage in (TRAIN, CRITIQUE, RECRITIQUE, SUMMARY)}  # the train stage's -> its


@dataclass
class Learned:
    episodic: EpisodicMemory  # the entries of the items each pool's walk kept
    semantic: dict  # pool -> its semantic record (a SEM variant's advice)
    offline: dict  # pool -> Offline
    advice: dict  # pool -> (its advice note, the note's vector)
    saved: Saved  # memory/METHOD.json (the engine writes it)


class Budgeted(Method):
    """One of the critique strategies (``strategy``: critique.engine.strategies.Strategy) on --train-budget."""

    def __init__(self, strategy):
        self.strategy, self.name = strategy, strategy.name + BUDGETED

    def needs(self, config) -> frozenset[str]:
        return frozenset()  # it asks the train stage's requests itself, as far as its budget goes

    def learning_calls(self, run) -> tuple[int, str]:
        per = 3 if run.config.on_mismatch == RECRITIQUE else 2  # the initial answer, its critique (a recritique)
        pools = len({item.user for item in run.dataset.train})
        summaries = pools if self.strategy.semantic else 0
        if not summaries:
            return calls_left(run, self.name, per * len(run.dataset.train), f"{per} per train item")
        return calls_left(run, self.name, per * len(run.dataset.train) + summaries,
                          f"{per} per train item and a summary per pool, more when its critiques are chunked",
                          bound=False)

    async def learn(self, run) -> Learned:
        shown = critic.shown_labels(run.dataset.train, run.config.critic, run.config.label_budget, run.config.seed,
                                    run.space)
        done, offline = await memory.each_pool(run, self.name,
                                               lambda items, stage: self._pool(run, items, stage, shown))
        semantic = {pool: record for pool, (_, record) in done.items() if record is not None}
        advice = {pool: note for pool, record in semantic.items()
                  if (note := _advice_note(pool, done[pool][0], record)) is not None}
        notes = {pool: self._notes(kept, advice.get(pool)) for pool, (kept, _) in done.items()}
        entries = [entry for kept, _ in done.values() for entry in kept]
        vectors = {pool: memory.encoded(run, [note])[0] for pool, note in advice.items()}
        return Learned(_episodic(run, entries), semantic, offline,
                       {pool: (note, vectors[pool]) for pool, note in advice.items()},
                       Saved(notes, offline, {"strategy": self.strategy.name, "semantic": semantic}))

    def _notes(self, kept: list[dict], advice: dict | None) -> list[dict]:
        """The memory's notes, those the strategy's prompt shows: each entry kept (EP), the advice (SEM)."""
        return ([_entry_note(entry) for entry in kept] if self.strategy.episodic else []) + ([advice] if advice else [])

    async def _pool(self, run, items: list, offline: Offline, shown: dict) -> tuple[list[dict], dict | None]:
        """(the entries the pool's walk kept, their semantic record: None without a summary)."""
        entries = await self._walk(run, items, offline, shown)
        if not self.strategy.semantic or not entries or offline.failed:
            return entries, None

        async def call(prompt: agents.Prompt, level: int, chunk: int) -> LLMResult:
            result = await offline.ask(STAGES[SUMMARY], None, prompt, run.summary_schema(), "summary",
                                       extra={"summary_level": level, "summary_chunk": chunk}, from_reserve=True)
            return result or LLMResult(None, error=f"the stage stopped: {offline.stopped}")

        return entries, run.semantic_record(await run.distiller(call).distil(entries), entries)

    async def _walk(self, run, items: list, offline: Offline, shown: dict) -> list[dict]:
        """The entries of the train items the budget reaches, in train order (each item one after another, so that
        where the budget stops never depends on timing)."""
        summary = run.distiller(None) if self.strategy.semantic else None
        kept: list[dict] = []
        step = Step(offline)
        for item in items:
            ask = step.asker(item)
            result = await ask(TRAIN, agents.initial_prompt(run.task, item, run.space),
                               run.dataset.card.response_schema, "answer")
            if result is None or result.error is not None:
                break
            answer = agents.initial_answer(result, item, run.space)
            entry, keep = await critic.critique_item(run, item, shown[entry_id(item)], answer, ask=ask)
            if offline.failed:
                break
            if entry is not None and keep:
                with_it = kept + [entry]
                if summary is not None and not step.affords(summary.cost(with_it, advice_reply(run, with_it))):
                    offline.skip(f"{item.id}: its critique is left out: the summary with it would pass the budget")
                    offline.stopped = BUDGET
                    break
                kept.append(entry)
            if offline.stopped is not None:
                break
        return kept

    def prompt(self, run, item, vector, exclude: str | None = None):
        found = memory.ready(run, self.name, item)
        if found is None:
            return None
        learned, pool = found
        shown = performance.performance_prompt(run, self.strategy.name, item, vector, exclude,
                                               Memory(learned.episodic, semantic=learned.semantic))
        if shown is None or pool not in learned.advice:
            return shown
        prompt, entries = shown
        note, note_vector = learned.advice[pool]
        listed = Retrieved([*entries, {"id": note["id"]}], [*entries.scores, float(note_vector @ np.asarray(vector))])
        listed.injected_tokens = entries.injected_tokens
        return prompt, listed

    def missing(self, run, item) -> str:
        found = memory.ready(run, self.name, item)
        if found is None:
            return memory.not_ready(run, self.name, item)
        learned, pool = found
        why = (learned.semantic.get(pool) or {}).get("error") or "no summary of this pool"
        return f"no {self.name} advice ({why})"


class Step:
    """The walk's calls through its Offline stage: each keeps the summary's tokens back (``reserve``), and the
    tokens spent before the last one are what a critique kept after it is checked against (``affords``)."""

    def __init__(self, offline: Offline):
        self.offline, self.reserve, self.before = offline, 0, 0

    def asker(self, item):
        """``ask(stage, prompt, schema, name)`` of the item's calls (a train stage's stage: STAGES names it)."""
        async def ask(stage: str, prompt: agents.Prompt, schema: dict, name: str) -> LLMResult | None:
            self.before = self.offline.spent
            return await self.offline.ask(STAGES[stage], item, prompt, schema, name, reserve=self.reserve)

        return ask

    def affords(self, summary: int) -> bool:
        """A summary of ``summary`` tokens still fits the budget as it stood before the last call (then it is the
        reserve the next calls keep back): the last call is the one that may pass the budget, and only it."""
        budget = self.offline.budget
        if budget is not None and self.before + summary >= budget:
            return False
        self.reserve = summary
        return True


def _entry_note(entry: dict) -> dict:
    """An episodic entry as a note of the memory: its question, the answer critiqued and the critique."""
    critique = " ".join(str(value) for value in entry["critique"].values())
    return {"id": entry["id"], "text": f"{entry['question']} -> {entry['initial_answer']}: {critique}",
            "sources": [entry["item_id"]]}


def _advice_note(pool: str, entries: list[dict], semantic: dict) -> dict | None:
    """The pool's advice as a note of the memory, resting on the train items of the critiques summarised; None
    without advice (its summary failed)."""
    if not semantic.get("advice"):
        return None
    return {"id": f"advice:{pool}", "text": semantic["advice"], "sources": [e["item_id"] for e in entries]}


def advice_reply(run, entries: list[dict]) -> int:
    """The tokens kept back for each summary reply: those of the longest advice list the summary schema allows
    (MAX_ADVICE_LINES lines of FIELD_CHARS["advice_line"] characters, as one-letter words; under --advice-sources
    cited each line naming every critique), counted with the model's tokenizer, at most --max-tokens."""
    line = " ".join("x" * (FIELD_CHARS["advice_line"] // 2))
    cited = run.config.advice_sources == "cited"
    lines = [{"text": line, "sources": list(range(1, len(entries) + 1))} if cited else line
             for _ in range(MAX_ADVICE_LINES)]
    reply = json.dumps({"advice": lines})
    return min(run.config.max_tokens, run.llm.count_tokens([{"role": "assistant", "content": reply}]))


def _episodic(run, entries: list[dict]) -> EpisodicMemory:
    """The episodic memory of ``entries``, each with its train question's vector (the encoder's, as the train
    stage's memory has it)."""
    train = run.dataset.train
    vectors = run.encoder.encode([i.question for i in train])
    row = {entry_id(item): n for n, item in enumerate(train)}
    return EpisodicMemory(entries, np.asarray(vectors)[[row[e["id"]] for e in entries]])


for _name in CRITIQUE_STRATEGIES:
    register(Budgeted(STRATEGIES[_name]))
