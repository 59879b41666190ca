"""Dynamic Cheatsheet, cumulative (DC-Cu; Suzgun et al. 2025, arXiv 2504.07952; suzgunmirac/dynamic-cheatsheet): a
cheatsheet the model rewrites after each question it answers, without labels. Offline over the train split of
each pool in order: the generator answers the question with the cheatsheet as it stands, then the curator is
given the previous cheatsheet, the question and the generator's whole answer, and writes the whole new cheatsheet
(a reply without one keeps the old, as the reference implementation's extractor does). The test questions are
answered by the generator with the final cheatsheet, which is one note whose sources are the train items whose
steps rewrote it."""

from __future__ import annotations

from dataclasses import dataclass

from critique.engine.field import memory, online
from critique.engine.field.offline import Offline, calls_left, method_prompt, reasoned_answer
from critique.engine.memory.episodic import pool_of
from critique.engine.method_memory import Saved, save
from critique.engine.methods import Method, register

EMPTY = "(empty)"  # the reference implementation's first cheatsheet
# The longest cheatsheet the embedded model's grammar lets the curator write (about 200 words): llama.cpp cannot
# parse the grammar of a string bound of 1500 characters (other providers get no bound: critique.llm.bounds).
CHEATSHEET_CHARS = 1000
GENERATOR, CURATOR = "dc_generator.j2", "dc_curator.j2"


CURATOR_SCHEMA = {"type": "object", "properties": {"cheatsheet": {"type": "string", "maxLength": CHEATSHEET_CHARS}},
                  "required": ["cheatsheet"], "additionalProperties": False}


@dataclass
class Cheatsheet:
    text: str = EMPTY
    sources: tuple = ()  # the train items whose curator rewrote it, in order

    def notes(self, pool: str) -> list[dict]:
        if self.text == EMPTY:
            return []
        return [{"id": f"cheatsheet:{pool}", "text": self.text, "sources": list(self.sources)}]


@dataclass
class Learned:
    sheets: dict  # pool -> Cheatsheet
    vectors: dict
    offline: dict
    saved: Saved  # memory/METHOD.json (the engine writes it)


class DynamicCheatsheet(Method):
    name = "dc"

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def learning_calls(self, run) -> tuple[int, str]:
        return calls_left(run, self.name, 2 * len(run.dataset.train), "2 per train item (generate, curate)")

    def schema(self, run) -> dict:
        return reasoned_answer(run.space)

    async def learn(self, run) -> Learned:
        sheets, offline = await memory.each_pool(run, self.name, lambda items, stage: self._pool(run, items, stage))
        notes = {pool: sheet.notes(pool) for pool, sheet in sheets.items()}
        return Learned(sheets, {p: memory.encoded(run, n) for p, n in notes.items()}, offline, Saved(notes, offline))

    async def _pool(self, run, items: list, offline: Offline) -> Cheatsheet:
        sheet = Cheatsheet()
        for item in items:
            answer = await offline.ask("dc_generate", item, self._generator(run, sheet, item), self.schema(run),
                                       "answer")
            if offline.read(answer, item) is None:
                if offline.stopped is not None:
                    return sheet
                continue
            prompt = method_prompt(CURATOR, cheatsheet=sheet.text, task=run.task, question=item.question,
                                   answer=answer.text)
            reply = offline.read(await offline.ask("dc_curate", item, prompt, CURATOR_SCHEMA, "cheatsheet"), item)
            if offline.stopped is not None:
                return sheet
            text = str((reply or {}).get("cheatsheet") or "").strip()
            if text:  # a reply without a cheatsheet keeps the old one
                sheet = Cheatsheet(text, (*sheet.sources, item.id))
        return sheet

    def _generator(self, run, sheet: Cheatsheet, item):
        return method_prompt(GENERATOR, cheatsheet=sheet.text, task=run.task, question=item.question,
                             answer_space=run.space)

    def prompt(self, run, item, vector, exclude: str | None = None):
        found = memory.ready(run, self.name, item)
        if found is None:
            return None
        learned, pool = found
        sheet = learned.sheets[pool]
        return self._generator(run, sheet, item), memory.shown(sheet.notes(pool), learned.vectors[pool], vector)

    def without(self, run, item, vector, note: str):
        """The test prompt of ``item`` with the cheatsheet (its one note) left out: the first, empty one."""
        return self._generator(run, Cheatsheet(), item)

    def missing(self, run, item) -> str:
        return memory.not_ready(run, self.name, item)


register(DynamicCheatsheet())


class OnlineCheatsheet(DynamicCheatsheet):
    """``dc:online``: Dynamic Cheatsheet as its paper runs it, over the test questions themselves
    (critique.engine.field.online): each question is answered with the cheatsheet as it stands (the test
    prediction), then the curator rewrites the cheatsheet from that answer, no label seen. No offline stage; the
    curator's calls are the method's learning, counted (and stopped by --train-budget) as an offline stage's are,
    in memory/dc_online.json."""

    name = "dc:online"
    learn = None  # no offline stage: it learns on the test questions

    def learning_calls(self, run) -> tuple[int, str]:
        return calls_left(run, self.name, len(run.dataset.test), "1 per test item (curate)")

    async def test(self, run, vectors: dict, policy) -> None:
        async def each(items: list, ledger: Offline) -> Cheatsheet:
            return await self._answer_each(run, items, ledger, vectors, policy)

        sheets, ledgers = await online.each_test_pool(run, self.name, each)
        save(run, self.name, {pool: sheet.notes(pool) for pool, sheet in sheets.items()}, ledgers)

    async def _answer_each(self, run, items: list, ledger: Offline, vectors: dict, policy) -> Cheatsheet:
        sheet = Cheatsheet()
        for n, item in enumerate(items):
            record = await online.answer(run, self.name, item, self._generator(run, sheet, item),
                                         sheet.notes(pool_of(item.user)), vectors, policy)
            if record.get("error"):
                online.stop(run, self.name, items[n + 1:], f"the answer to {item.id} failed")
                return sheet
            answer = online.reply_of(run, record)
            if answer is None or ledger.stopped is not None:
                continue  # no reply to learn from (it did not fit), or the budget is spent: it answers on
            prompt = method_prompt(CURATOR, cheatsheet=sheet.text, task=run.task, question=item.question,
                                   answer=answer)
            reply = ledger.read(await ledger.ask("dc_curate", item, prompt, CURATOR_SCHEMA, "cheatsheet"), item)
            if ledger.failed:
                online.stop(run, self.name, items[n + 1:], ledger.stopped)
                return sheet
            text = str((reply or {}).get("cheatsheet") or "").strip()
            if text:
                sheet = Cheatsheet(text, (*sheet.sources, item.id))
        return sheet


register(OnlineCheatsheet())
