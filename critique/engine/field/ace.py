"""ACE, Agentic Context Engineering (Zhang et al. 2025, arXiv 2510.04618; reference implementation ace-agent/ace):
a playbook (critique.engine.field.playbook) that a generator answers with, a reflector diagnoses each answer
against the gold label (``ace``) or without it (``ace:nolabel``), and a curator turns each reflection into new
bullets. Offline over the train split of each pool, one item at a time (batch size 1), as ``ACE._train_single_
sample`` does: generate; when the answer is wrong, reflect and generate again with the reflection, up to ROUNDS
times, stopping once it is right (a right answer is reflected on once); tag the used bullets; curate; de-duplicate.
The test questions are answered by the generator with the final playbook and an empty reflection."""

from __future__ import annotations

import json
from dataclasses import dataclass

from critique.engine import parsing
from critique.engine.field import memory
from critique.engine.field.offline import Offline, calls_left, method_prompt
from critique.engine.field.playbook import CONTENT_CHARS, SECTIONS, TAGS, Playbook
from critique.engine.method_memory import Saved
from critique.engine.method_settings import Setting, value
from critique.engine.methods import Method, register

EPOCHS = 1  # passes over the train split (the reference implementation's num_epochs; the paper's is at most 5)
ROUNDS = 3  # reflect-and-regenerate rounds after a wrong answer (its max_num_rounds; the paper's at most 5)
SETTINGS = (Setting("epochs", EPOCHS, "passes over the train split (the paper's at most 5)", low=1),
            Setting("rounds", ROUNDS, "reflect-and-regenerate rounds after a wrong answer (the paper's at most 5)",
                    low=1))
TEXT_CHARS = 600  # the longest reasoning or diagnosis field the embedded model's grammar allows
LIST_ITEMS = 10  # the most bullet ids, tags or operations one reply may hold (for the embedded model's grammar)
WRONG, RIGHT = "Predicted answer does not match ground truth", "Predicted answer matches ground truth"
NO_FEEDBACK = "(none: the correct answer is not known)"
GENERATOR, REFLECTOR, CURATOR = "ace_generator.j2", "ace_reflector.j2", "ace_curator.j2"
STAGES = ("ace_generate", "ace_reflect", "ace_curate")


def _text(chars: int = TEXT_CHARS) -> dict:
    return {"type": "string", "maxLength": chars}


def _object(properties: dict) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _list(items: dict) -> dict:
    return {"type": "array", "maxItems": LIST_ITEMS, "items": items}


def generator_schema(space: list[str]) -> dict:
    return _object({"reasoning": _text(), "bullet_ids": _list(_text(16)),
                    "answer": {"type": "string", "enum": list(space)}})


REFLECTOR_SCHEMA = _object({**{key: _text() for key in ("reasoning", "error_identification", "root_cause_analysis",
                                                         "correct_approach", "key_insight")},
                            "bullet_tags": _list(_object({"id": _text(16), "tag": {"enum": list(TAGS)}}))})
CURATOR_SCHEMA = _object({"reasoning": _text(),
                          "operations": _list(_object({"type": {"enum": ["ADD"]}, "section": {"enum": list(SECTIONS)},
                                                       "content": _text(CONTENT_CHARS)}))})


@dataclass
class Learned:
    playbooks: dict  # pool -> Playbook
    vectors: dict  # pool -> its bullets' vectors
    offline: dict  # pool -> Offline
    saved: Saved  # memory/METHOD.json (the engine writes it)


class ACE(Method):
    settings = SETTINGS

    def __init__(self, name: str, labelled: bool):
        self.name, self.labelled = name, labelled
        if not labelled:  # no label, no wrong answer to reflect on again: one reflection a step
            self.settings = tuple(s for s in SETTINGS if s.key != "rounds")

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def learning_calls(self, run) -> tuple[int, str]:
        epochs = value(run, self.name, "epochs")
        # generate, each round's reflection and regeneration, curate (without a label: one reflection)
        per = 2 + 2 * value(run, self.name, "rounds") if self.labelled else 3
        return calls_left(run, self.name, epochs * per * len(run.dataset.train),
                          f"{per} per train item and epoch, {epochs} epoch{'s' if epochs > 1 else ''}")

    def schema(self, run) -> dict:
        return generator_schema(run.space)

    async def learn(self, run) -> Learned:
        books, offline = await memory.each_pool(run, self.name, lambda items, stage: self._pool(run, items, stage))
        return Learned(books, {p: memory.encoded(run, b.notes()) for p, b in books.items()}, offline,
                       Saved({p: b.notes() for p, b in books.items()}, offline))

    async def _pool(self, run, items: list, offline: Offline) -> Playbook:
        book = Playbook()
        epochs = value(run, self.name, "epochs")
        total = epochs * len(items)
        for epoch in range(epochs):
            for n, item in enumerate(items):
                if not await self._step(run, item, book, offline, epoch * len(items) + n + 1, total):
                    return book
        return book

    async def _step(self, run, item, book: Playbook, offline: Offline, sample: int, total: int,
                    reply: dict | None = None) -> bool:
        """One train item: generate (``reply``: the answer already given, online), reflect (and regenerate),
        curate; False once the stage has stopped."""
        reply = reply or await self._generate(run, item, book, "(empty)", offline)
        if reply is None:
            return offline.stopped is None
        reflection = None
        for _ in range(value(run, self.name, "rounds") if self.labelled and reply["answer"] != item.answer else 1):
            feedback = (RIGHT if reply["answer"] == item.answer else WRONG) if self.labelled else NO_FEEDBACK
            reflection = await self._reflect(run, item, book, reply, feedback, offline)
            if reflection is None or not self.labelled or reply["answer"] == item.answer:
                break
            again = await self._generate(run, item, book, reflection, offline)
            if again is None:
                break
            reply = again
            if reply["answer"] == item.answer:
                break
        if offline.stopped is not None:
            return False
        if reflection is not None:
            await self._curate(run, item, book, reflection, sample, total, offline)
        return offline.stopped is None

    async def _generate(self, run, item, book: Playbook, reflection: str, offline: Offline) -> dict | None:
        prompt = method_prompt(GENERATOR, playbook=book.render(), reflection=reflection, task=run.task,
                               question=item.question, answer_space=run.space)
        result = await offline.ask("ace_generate", item, prompt, self.schema(run), "answer")
        return generated(offline.read(result, item), result.text if result is not None else None, run.space)

    async def _reflect(self, run, item, book: Playbook, reply: dict, feedback: str, offline: Offline) -> str | None:
        prompt = method_prompt(REFLECTOR, task=run.task, question=item.question, reasoning=reply["reasoning"],
                               predicted=reply["answer"] or "(no valid answer)",
                               gold=item.answer if self.labelled else None, feedback=feedback,
                               used=book.used(reply["bullet_ids"]))
        result = await offline.ask("ace_reflect", item, prompt, REFLECTOR_SCHEMA, "reflection")
        parsed = offline.read(result, item)
        if parsed is None:
            return None
        book.tag(parsed.get("bullet_tags") if isinstance(parsed.get("bullet_tags"), list) else [])
        return result.text  # the reflector's whole reply is the reflection the generator and the curator see

    async def _curate(self, run, item, book: Playbook, reflection: str, sample: int, total: int,
                      offline: Offline) -> None:
        prompt = method_prompt(CURATOR, labelled=self.labelled, sample=sample, total=total,
                               stats=json.dumps(book.stats()), reflection=reflection, playbook=book.render(),
                               task=run.task, question=item.question, sections=list(SECTIONS))
        result = await offline.ask("ace_curate", item, prompt, CURATOR_SCHEMA, "curation")
        parsed = offline.read(result, item)
        if parsed is not None and isinstance(parsed.get("operations"), list):
            book.add(parsed["operations"], item.id)
            book.deduplicate(run.encoder.encode)

    def prompt(self, run, item, vector, exclude: str | None = None):
        found = memory.ready(run, self.name, item)
        if found is None:
            return None
        learned, pool = found
        book = learned.playbooks[pool]
        return self._test_prompt(run, book, item), memory.shown(book.notes(), learned.vectors[pool], vector)

    def without(self, run, item, vector, note: str):
        """The test prompt of ``item`` with bullet ``note`` left out of the playbook (credit by deletion)."""
        learned, pool = memory.ready(run, self.name, item)
        book = learned.playbooks[pool]
        return self._test_prompt(run, Playbook([b for b in book.bullets if b["id"] != note], book.counter), item)

    def _test_prompt(self, run, book: Playbook, item):
        return method_prompt(GENERATOR, playbook=book.render(), reflection="(empty)", task=run.task,
                             question=item.question, answer_space=run.space)

    def missing(self, run, item) -> str:
        return memory.not_ready(run, self.name, item)


def generated(reply: dict | None, text: str | None, space: list[str]) -> dict | None:
    """What the generator's reply says (``reply``: its JSON object, ``text``: the reply): its reasoning, its answer
    and the bullets it used; None without one."""
    if reply is None:
        return None
    ids = reply.get("bullet_ids") if isinstance(reply.get("bullet_ids"), list) else []
    return {"reasoning": str(reply.get("reasoning", "")), "answer": parsing.extract_answer(text, space),
            "bullet_ids": [str(i) for i in ids]}


register(ACE("ace", labelled=True))
register(ACE("ace:nolabel", labelled=False))
