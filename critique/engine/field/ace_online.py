"""``ace:online``: ACE's online adaptation (``_online_train_and_test``: each sample is first answered with the
playbook as it stands, then the playbook learns from it), over the test questions themselves in the stream's
order (critique.engine.field.online). The answer is the generator's with the playbook and an empty reflection
(the test prediction); then the offline step runs on the same question with its label as the ground truth
(reflect, regenerate with the reflection up to ROUNDS times while wrong, tag, curate, de-duplicate): the
deployed case with feedback, as the stream's gold arm. The learning calls are counted (and stopped by
--train-budget, after which it answers on with the last playbook) in memory/ace_online.json."""

from __future__ import annotations

from critique.engine import parsing
from critique.engine.field import online
from critique.engine.field.ace import ACE, GENERATOR, SETTINGS, generated
from critique.engine.field.offline import Offline, calls_left, method_prompt
from critique.engine.field.playbook import Playbook
from critique.engine.method_memory import save
from critique.engine.method_settings import value
from critique.engine.methods import register


class OnlineACE(ACE):
    learn = None  # no offline stage: it learns on the test questions
    settings = tuple(s for s in SETTINGS if s.key == "rounds")  # no epochs: each test question is met once

    def __init__(self):
        super().__init__("ace:online", labelled=True)

    def learning_calls(self, run) -> tuple[int, str]:
        # after its answer: each round's reflection and regeneration, then the curation
        per = 1 + 2 * value(run, self.name, "rounds")
        return calls_left(run, self.name, per * len(run.dataset.test), f"{per} per test item")

    async def test(self, run, vectors: dict, policy) -> None:
        async def each(items: list, ledger: Offline) -> Playbook:
            return await self._answer_each(run, items, ledger, vectors, policy)

        books, ledgers = await online.each_test_pool(run, self.name, each)
        save(run, self.name, {pool: book.notes() for pool, book in books.items()}, ledgers)

    async def _answer_each(self, run, items: list, ledger: Offline, vectors: dict, policy) -> Playbook:
        book = Playbook()
        for n, item in enumerate(items):
            prompt = method_prompt(GENERATOR, playbook=book.render(), reflection="(empty)", task=run.task,
                                   question=item.question, answer_space=run.space)
            record = await online.answer(run, self.name, item, prompt, book.notes(), vectors, policy)
            if record.get("error"):
                online.stop(run, self.name, items[n + 1:], f"the answer to {item.id} failed")
                return book
            text = online.reply_of(run, record)
            reply = generated(parsing.json_object(text), text, run.space) if text else None
            if reply is None or ledger.stopped is not None:
                continue  # no reply to learn from, or the budget is spent: it answers on
            await self._step(run, item, book, ledger, n + 1, len(items), reply)
            if ledger.failed:
                online.stop(run, self.name, items[n + 1:], ledger.stopped)
                return book
        return book


register(OnlineACE())
