"""``dspy:knn``: DSPy's KNNFewShot (the pinned ``dspy`` package, ``critique-bench[dspy]``) over the run's train split,
with the run's encoder as its vectorizer. For each test question DSPy's own KNN finds the K nearest train examples
and DSPy's own BootstrapFewShot (no bootstrapped demos: the labelled neighbours are the demos, so it asks the model
nothing) orders them; DSPy's JSONAdapter writes the prompt (the dataset's task as the signature's instructions,
``question -> answer`` with the answer space as the answer's type), and the engine's step asks it, as every
strategy's test prompt. The offline stage makes no call: KNNFewShot retrieves at test time; its memory file lists
the labelled train examples it retrieves from, each a note."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from critique.engine.field import dspy_program, memory
from critique.engine.field.offline import Offline
from critique.engine.memory.episodic import Retrieved, entry_id, pool_of
from critique.engine.method_memory import Saved
from critique.engine.methods import Method, register

PREFIX = "question: "  # how DSPy's KNN writes an example's one input field before it embeds it


@dataclass
class Learned:
    knn: dict  # pool -> dspy.KNN over the pool's train examples
    items: dict  # pool -> {id(example): train item}
    vectors: dict  # pool -> the train questions' vectors (for the similarity each shown demo is logged with)
    signature: object
    saved: Saved  # memory/METHOD.json (the engine writes it)


class DSPyKNN(Method):
    name = "dspy:knn"

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    async def learn(self, run) -> Learned:
        dspy = dspy_program.module()
        pools: dict[str, list] = {}
        for item in run.dataset.train:
            pools.setdefault(pool_of(item.user), []).append(item)

        def encode(texts: list[str]):
            return np.asarray(run.encoder.encode([t.removeprefix(PREFIX) for t in texts]), dtype=np.float32)

        vectorizer = dspy.Embedder(encode, caching=False)
        knn, items, vectors = {}, {}, {}
        for pool, train in pools.items():
            examples = dspy_program.examples(train)
            knn[pool] = dspy.KNN(run.config.k, examples, vectorizer=vectorizer)
            items[pool] = {id(example): item for example, item in zip(examples, train)}
            vectors[pool] = {entry_id(item): v for item, v in zip(train, knn[pool].trainset_vectors)}
        notes = {pool: [{"id": entry_id(i), "text": f"{i.question} -> {i.answer}", "sources": [i.id]} for i in train]
                 for pool, train in pools.items()}  # its memory: the labelled train examples it retrieves from
        share = memory.budget_share(run, pools)  # nothing spent of it: KNNFewShot asks the model nothing offline
        offline = {pool: Offline(run, self.name, budget=share) for pool in pools}
        return Learned(knn, items, vectors, dspy_program.signature(run), Saved(notes, offline))

    def prompt(self, run, item, vector, exclude: str | None = None):
        learned = run.learned.get(self.name)
        pool = pool_of(item.user)
        if learned is None or pool not in learned.knn:
            return None
        demos = [(d, train) for d, train in self._demos(run, learned, pool, item) if train.id != exclude]
        prompt = dspy_program.test_prompt(learned.signature, [d for d, _ in demos], item.question)
        ids = [entry_id(train) for _, train in demos]
        scores = [float(learned.vectors[pool][e] @ np.asarray(vector)) for e in ids]
        return prompt, Retrieved([{"id": e} for e in ids], scores)

    def without(self, run, item, vector, note: str):
        """The test prompt of ``item`` with the demo of train entry ``note`` left out (the others in their order)."""
        learned, pool = run.learned[self.name], pool_of(item.user)
        demos = [d for d, train in self._demos(run, learned, pool, item) if train.id != item.id
                 and entry_id(train) != note]
        return dspy_program.test_prompt(learned.signature, demos, item.question)

    def _demos(self, run, learned, pool: str, item) -> list[tuple]:
        """(DSPy demo, its train item) of the K nearest train examples, in the order BootstrapFewShot gives."""
        dspy = dspy_program.module()
        neighbours = learned.knn[pool](question=item.question)
        with dspy_program.quiet():
            program = dspy.BootstrapFewShot(max_bootstrapped_demos=0, max_labeled_demos=run.config.k).compile(
                dspy.Predict(learned.signature), trainset=neighbours)  # DSPy's own demo choice: no call
        return [(d, learned.items[pool][id(d)]) for d in program.demos]

    def missing(self, run, item) -> str:
        return f"no {self.name} retriever for this pool (its train split has no example of it)"


register(DSPyKNN())
