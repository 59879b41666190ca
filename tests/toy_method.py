"""A memory method in one file, as a user would write one: the K most recent train items of the question's
pool, each with its gold label, as examples before the question. It needs no train stage (no initial answer,
no critique, no summary), and registering it is all it takes (critique.engine.methods)."""

import hashlib

from critique.engine import agents
from critique.engine.memory.episodic import Retrieved, entry_id
from critique.engine.methods import register

NAME = "recent_k"
TEMPLATE = "Examples:\n{examples}\n\n{task}\n\n{question}\n\nAnswer with JSON: {{\"answer\": one of {options}}}."


class RecentK:
    name = NAME

    def needs(self, config):
        return frozenset()

    def prompt(self, run, item, vector, exclude=None):
        pool = [i for i in run.dataset.train if i.user == item.user and i.id != exclude]
        shown = pool[-run.config.k:][::-1]  # the most recent first
        examples = "\n".join(f"Q: {i.question}\nA: {i.answer}" for i in shown)
        text = TEMPLATE.format(examples=examples, task=run.dataset.card.task, question=item.question,
                               options=", ".join(run.space))
        prompt = agents.Prompt(f"{NAME}.txt", hashlib.sha256(TEMPLATE.encode()).hexdigest(),
                               [{"role": "user", "content": text}])
        scores = run.encoder.encode([i.question for i in shown]) @ vector if shown else []
        return prompt, Retrieved([{"id": entry_id(i)} for i in shown], scores)


register(RecentK())
