"""The pipeline: the train stage (initial predictions, critiques, semantic summary), which returns the memory it
made (critique.engine.memory.value.Memory), then each strategy on the test split over that memory. Every call and
prediction goes to the run directory.

Resuming: a prediction already in ``predictions.jsonl`` is not redone, and a call whose
request hash is already in ``calls.jsonl`` (without error) is not made again; its logged
response is used. So a completed run makes no call at all, and a run killed at any point
continues where it stopped without doubling a record.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from critique.engine import agents, many_shot, parsing, prompts
from critique.base import records
from critique.base import rundir
from critique.datasets.splits import Dataset, Item
from critique.llm import context
from critique.llm.client import LLM, LLMResult
from critique.engine.memory import critic, semantic
from critique.base.config import RunConfig
from critique.engine.memory.episodic import EpisodicMemory, entry_id, pool_of
from critique.engine.memory.value import Memory
from critique.engine.run_directory import pkey
from critique.engine.step import Step
from critique.base.vocab import CRITIQUE, EP_LABEL, MANY_SHOT, SUMMARY, TRAIN
from critique.engine import question
from critique.engine.methods import hook, method, needed_stages, offline_stages, prompt_order
from critique.engine.strategies import TRAIN_STAGES
from critique.engine.policy import SHARED, Policy


class Run(Step):
    """One run: its directory and its step (critique.engine.step.Step), the train stage, the test stage."""

    def __init__(self, out: Path, config: RunConfig, dataset: Dataset, llm: LLM, encoder,
                 probe: dict | None = None, ablation: dict | None = None, progress: bool = True,
                 learner: bool = False):
        from critique.llm.params import run_effort

        if getattr(config, "train_fraction", None) is not None:
            from critique.datasets.subsets import train_subset

            dataset = replace(dataset, train=train_subset(dataset.train, config.train_fraction, config.seed))
        # the effort the manifest records: a reasoning model's default is resolved (as llm_config does)
        config = replace(config, reasoning_effort=run_effort(config.model, config.reasoning_effort))
        super().__init__(Path(out), config, dataset, llm, probe, ablation, learner)
        self.encoder, self.progress = encoder, progress
        self.task = prompts.Task(dataset.card.task, config.prompts)  # every prompt of the run: config.prompts's set
        self.learned: dict[str, object] = {}  # a memory method's memory from its own offline stage, by its name

    def _manifest(self, old: dict | None) -> dict:
        """The run directory's manifest, with many_shot's examples when the run has it (critique.engine.many_shot:
        decided once, when the run is opened)."""
        manifest = super()._manifest(old)
        if MANY_SHOT in manifest["config"]["strategies"]:
            manifest[MANY_SHOT] = many_shot.chosen(self)["record"]
        return records.check("manifest", manifest)

    # ---- train stage ----------------------------------------------------------------
    async def train_stage(self, stages: tuple[str, ...] = TRAIN_STAGES) -> Memory:
        """The train stage's ``stages`` (critique.engine.strategies.TRAIN_STAGES; a plain run makes those its
        strategies need: needed_stages), and the memory they made: the critique stage's episodic memory and
        EP_LABEL's pool, the summary's semantic memory. A stage not made leaves its part empty; without the
        critique stage, EP_LABEL's pool is made of the train items alone when the run answers with EP_LABEL."""
        if TRAIN in stages:
            await self.initial_predictions()
        memory = await self.critiques() if CRITIQUE in stages else Memory(labels=self._labels_without_critiques())
        if SUMMARY in stages:
            memory = replace(memory, semantic=await self.summaries(memory.episodic))
        return memory

    async def initial_predictions(self) -> None:
        todo = [i for i in self.dataset.train if pkey("train_predict", None, i.user, i.id) not in self.predictions]
        await self.each(todo, self._initial, "initial predictions")

    async def _initial(self, item: Item) -> None:
        await self.answer(TRAIN, None, item, agents.initial_prompt(self.task, item, self.space), seed=(TRAIN,))

    def initial_answer(self, item: Item) -> str | None:
        return agents.critiqued_answer(self.predictions.get(pkey(TRAIN, None, item.user, item.id)))

    async def critiques(self) -> Memory:
        """The critique stage's memory (no semantic memory yet): its episodic memory (critique.engine.memory.critic:
        the strict assertion check, --on-mismatch, --critic), saved, and the label pool of EP_LABEL: every train
        item with its label, whether or not its critique parsed or entered memory (with a gold critic the label
        baseline never depends on the critic; with a self critic the label is the critic's believed answer). Both
        share one encoding of the train questions."""
        entries = await critic.critiques(self)
        train = self.dataset.train
        vectors = self.encoder.encode([i.question for i in train])
        row = {entry_id(item): n for n, item in enumerate(train)}
        episodic = EpisodicMemory(entries, vectors[[row[e["id"]] for e in entries]])
        episodic.save(self.out / rundir.MEMORY)
        return Memory(episodic, self.label_pool(episodic, vectors))

    def label_entry(self, item: Item, label: str | None = None) -> dict:
        """A train item as EP_LABEL shows it: question, initial answer, its label (default: the gold)."""
        return {**agents.labeled_example(item, item.answer if label is None else label),
                "initial_answer": self.initial_answer(item) or agents.NO_ANSWER}

    def label_pool(self, episodic: EpisodicMemory | None, vectors=None) -> EpisodicMemory:
        """EP_LABEL's pool: the train items that have a label to show (critic.ep_labels: with a self critic, the
        answer the critic believes in ``episodic``'s entries), with it; ``vectors``: the train questions' encoding,
        when made already."""
        if vectors is None:
            vectors = self.encoder.encode([i.question for i in self.dataset.train])
        shown = critic.ep_labels(self, episodic.entries if episodic is not None else [])
        keep = [n for n, item in enumerate(self.dataset.train) if entry_id(item) in shown]
        return EpisodicMemory([self.label_entry(self.dataset.train[n], shown[entry_id(self.dataset.train[n])])
                               for n in keep], vectors[keep])

    def _labels_without_critiques(self) -> EpisodicMemory | None:
        """EP_LABEL's pool when the critique stage did not run (a gold critic: the labels need no critique), made
        only when the run answers with EP_LABEL."""
        return self.label_pool(None) if EP_LABEL in self.config.strategies else None

    async def summaries(self, episodic: EpisodicMemory) -> dict[str, dict]:
        """Each pool's semantic memory (pool -> its record), saved: the critiques of ``episodic`` distilled in
        chunks that fit the context, merged until one advice list remains (critique.engine.memory.semantic)."""
        pools: dict[str, list[dict]] = {}
        for entry in episodic.entries:
            pools.setdefault(pool_of(entry["user"]), []).append(entry)
        made: dict[str, dict] = {}

        async def one(pool: str) -> None:
            user = None if pool == "all" else pool

            async def call(prompt: agents.Prompt, level: int, chunk: int) -> LLMResult:
                return await self.call(SUMMARY, None, None, user, prompt, self.summary_schema(), "summary",
                                       extra={"summary_level": level, "summary_chunk": chunk})

            made[pool] = self.semantic_record(await self.distiller(call).distil(pools[pool]), pools[pool])

        await self.each(sorted(pools), one, "semantic memory")
        made = dict(sorted(made.items()))
        semantic.save(self.out / rundir.MEMORY, made)
        return made

    def distiller(self, call) -> semantic.Distiller:
        """The summary's distiller for the run's context window and --advice-sources, each of its calls
        ``call(prompt, level, chunk)``."""
        window = self.llm.context_window
        budget = context.summary_budget(window, self.config.max_tokens) if window else None
        return semantic.Distiller(self.task, call, self.llm.count_tokens, budget, self.config.advice_sources == "cited")

    def summary_schema(self) -> dict:
        """The JSON schema of a summary's reply (its advice lines, with their sources under --advice-sources cited)."""
        return parsing.CITED_SUMMARY_SCHEMA if self.config.advice_sources == "cited" else parsing.SUMMARY_SCHEMA

    def semantic_record(self, done: semantic.Outcome, entries: list[dict]) -> dict:
        """A pool's semantic memory: the advice the summary of its critiques ``entries`` gave (``done``)."""
        template = "summary_cited.j2" if self.config.advice_sources == "cited" else "summary.j2"
        return records.make(
            "semantic", advice=parsing.advice_text([line["text"] for line in done.lines]), lines=done.lines,
            source_ids=[e["id"] for e in entries], model=self.config.model,
            template_hash=prompts.template_hash(template, self.config.prompts), timeout=done.timeout,
            error=done.error, run_id=self.run_id, request_hash=done.request_hash,
            context_tokens=self.llm.context_window, tree=[[node.record() for node in level] for level in done.tree])

    # ---- test stage -----------------------------------------------------------------
    async def test_stage(self, memory: Memory, policy: Policy = SHARED) -> None:
        """Each strategy on every test question, the critique strategies over ``memory`` (the train stage's, or one
        made elsewhere: a de-inflation arm's); ``policy``: where the answers may come from (an ablation whose test
        stage is an independent trial: critique.engine.policy.INDEPENDENT)."""
        vectors = dict(zip((entry_id(i) for i in self.dataset.test),
                           self.encoder.encode([i.question for i in self.dataset.test])))
        # Question by question, in PREFIX_ORDER: a local model reuses the shared prompt prefix
        # (EP_CRIT and EP+SEM_CRIT share all their examples) instead of reading it again.
        order = prompt_order(self.config.strategies)
        online = [name for name in order if hook(method(name), "test")]  # methods that learn as they answer
        todo = [(name, i) for i in self.dataset.test for name in order
                if name not in online and pkey("test", name, i.user, i.id) not in self.predictions]
        await asyncio.gather(
            self.each(todo, lambda pair: question.ask(self, pair[0], pair[1], vectors[entry_id(pair[1])],
                                                      memory=memory, policy=policy),
                      f"test ({', '.join(order)})"),
            *(method(name).test(self, vectors, policy) for name in online))

    def no_memory(self, item: Item, memory: Memory) -> str:
        """Why a strategy that needs the pool's advice has none in ``memory``: the summary's own error (a failed
        call, which a rerun retries; or a reply without advice, which it does not: the reply is the model's; or a
        prompt that did not fit the model's context, which --context-tokens cures)."""
        why = memory.summary(item.user).get("error") or "no summary of this pool"
        retry = "" if "no advice in the reply" in why or semantic.CONTEXT_MISSED in why else "; rerun to retry"
        return f"no semantic memory for this pool ({why}; {rundir.MEMORY}/semantic.json){retry}"

    async def execute(self) -> None:
        """The train stages the run's strategies need, their own offline stages, then the test stage over the
        memory the train stage made."""
        memory = await self.train_stage(needed_stages(self.config))
        await offline_stages(self)
        await self.test_stage(memory)
