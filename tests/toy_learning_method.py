"""A memory method that learns, in one file, written against critique.engine.protocols alone: its offline stage
asks the model for one hint per train item (through ``run.call``) and returns its memory, which the engine keeps and
saves; its prompt shows the K hints of the question's pool most similar to it; ``learning_calls`` gives the cost
line its count, ``without`` lets credit delete each hint it showed, and ``version`` keeps a changed method from
resuming its old answers."""

import hashlib

import numpy as np

from critique.engine import agents, parsing
from critique.engine.memory.episodic import Retrieved
from critique.engine.method_memory import Saved
from critique.engine.methods import Method, register

NAME = "hints"
HINT = "Write one short hint for questions like this one.\n\nQuestion: {question}\nLabel: {label}"
TEMPLATE = "Hints:\n{hints}\n\n{task}\n\n{question}\n\nAnswer with JSON: {{\"answer\": one of {options}}}."
SCHEMA = {"type": "object", "properties": {"hint": {"type": "string", "maxLength": 200}}, "required": ["hint"]}


class Memory:
    def __init__(self, notes: dict, vectors: dict, calls: dict):
        self.notes, self.vectors = notes, vectors  # pool -> its hints; pool -> their vectors
        self.saved = Saved(notes, {pool: {"offline_calls": n, "stopped": None} for pool, n in calls.items()})


class Hints(Method):
    name = NAME
    version = 1

    def learning_calls(self, run):
        made = sum(r.get("strategy") == NAME and r.get("stage") == "hint" for r in run.logged.values())
        return max(0, len(run.dataset.train) - made), "1 per train item"

    async def learn(self, run):
        notes, calls = {}, {}
        for item in run.dataset.train:
            pool = item.user or "all"
            text = HINT.format(question=item.question, label=item.answer)
            prompt = agents.Prompt("hint.txt", hashlib.sha256(HINT.encode()).hexdigest(),
                                   [{"role": "user", "content": text}])
            result = await run.call("hint", NAME, item.id, item.user, prompt, SCHEMA, "hint")
            reply = parsing.json_object(result.text or "") or {}
            notes.setdefault(pool, []).append({"id": f"hint:{item.id}", "text": str(reply.get("hint", "")),
                                               "sources": [item.id]})
            calls[pool] = calls.get(pool, 0) + 1
        vectors = {pool: np.asarray(run.encoder.encode([n["text"] for n in mine])) for pool, mine in notes.items()}
        return Memory(notes, vectors, calls)

    def prompt(self, run, item, vector, exclude=None):
        memory = run.learned.get(NAME)
        pool = item.user or "all"
        if memory is None or pool not in memory.notes:
            return None
        scores = memory.vectors[pool] @ np.asarray(vector)
        order = [int(n) for n in np.argsort(-scores, kind="stable")[:run.config.k]]
        shown = [memory.notes[pool][n] for n in order]
        return self._render(run, item, shown), Retrieved([{"id": n["id"]} for n in shown], [scores[n] for n in order])

    def without(self, run, item, vector, note):
        prompt, shown = self.prompt(run, item, vector)
        notes = {n["id"]: n for n in run.learned[NAME].notes[item.user or "all"]}
        return self._render(run, item, [notes[e["id"]] for e in shown if e["id"] != note])

    def missing(self, run, item):
        return f"no {NAME} memory for this pool"

    def _render(self, run, item, shown):
        text = TEMPLATE.format(hints="\n".join(f"- {n['text']}" for n in shown), task=run.dataset.card.task,
                               question=item.question, options=", ".join(run.space))
        return agents.Prompt(f"{NAME}.txt", hashlib.sha256(TEMPLATE.encode()).hexdigest(),
                             [{"role": "user", "content": text}])


register(Hints())
