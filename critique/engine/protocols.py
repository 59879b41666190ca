"""What a memory method and an experiment are handed, and what a memory method provides: typed Protocols, so that
a new method or experiment is written against these pages and not against the engine's classes.

- ``RunContext``: the run a method or an experiment receives (``critique.engine.pipeline.Run`` is one): its
  settings and data, its model and encoder, what it has logged, the memory methods' own memories, and the step
  that asks (``call``, ``answer``, ``unanswered``). The critique memory of its train stage is not on it: it is a
  value (critique.engine.memory.value.Memory) that ``Run.train_stage`` returns and the test stage is handed.
- ``MemoryMethod``: a strategy of the test stage (critique.engine.methods registers them). Its required members
  are below; ``critique.engine.methods.Method`` gives every optional one its default, and
  ``critique.engine.methods.hook`` is the one place an optional hook of a method that does not derive from it is
  looked up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from critique.base.config import RunConfig
    from critique.datasets.splits import Dataset, Item
    from critique.engine.agents import Prompt
    from critique.engine.memory.episodic import EpisodicMemory, Retrieved
    from critique.engine.memory.value import Memory
    from critique.engine.policy import Policy
    from critique.engine.prompts import Task
    from critique.llm.client import LLM, LLMResult


class RunContext(Protocol):
    """One run as a method or an experiment sees it."""

    config: RunConfig  # every setting (critique.base.config)
    dataset: Dataset  # its train and test items and its card
    task: Task  # the task text, in the run's prompt set
    space: list[str]  # the answer space
    llm: LLM  # the model: its context window, token counting, price
    encoder: Any  # critique.engine.memory.embed.Encoder: ``encode(texts)`` -> L2-normalised vectors
    out: Path  # the run directory
    run_id: str
    predictions: dict[tuple, dict]  # (stage, strategy, user, item id) -> the latest prediction without an error
    logged: dict[str, dict]  # request hash -> its call record
    learned: dict[str, object]  # method name -> the state its ``learn`` returned

    async def call(self, stage: str, strategy: str | None, item_id: str | None, user: str | None, prompt: Prompt,
                   schema: dict, name: str, policy: Policy = ..., extra: dict | None = None) -> LLMResult:
        """One logged call whose reply is not an answer (a critique, advice, a method's own step)."""

    async def answer(self, stage: str, strategy: str | None, item: Item, prompt: Prompt, *, seed: tuple,
                     **options) -> dict:
        """One question asked: call, judge, prediction record (critique.engine.pipeline.Run.answer's options)."""

    def unanswered(self, stage: str, strategy: str | None, item: Item, error: str | None,
                   extra: dict | None = None, **options) -> dict:
        """The prediction record of a question that was not asked."""

    async def each(self, items: list, work, desc: str) -> None:
        """``work(item)`` for every item at once (the model bounds the calls in flight)."""

    def label_pool(self, episodic: EpisodicMemory | None, vectors=None) -> EpisodicMemory:
        """EP_LABEL's pool: every train item with the label the critic was shown (a self critic's: the answer it
        believes in ``episodic``'s entries)."""

    def initial_answer(self, item: Item) -> str | None:
        """The train stage's answer to ``item``."""

    def no_memory(self, item: Item, memory: Memory) -> str:
        """Why a strategy that needs the item's pool's advice has none in ``memory``."""


class MemoryMethod(Protocol):
    """A test-stage strategy: what it needs from the train stage, and the prompt it shows for one question."""

    name: str  # the strategy's name in --strategies and the tables
    version: int  # part of a run's identity: a run made by another version of the method is not resumed
    settings: tuple  # its own settings (critique.engine.method_settings.Setting), given with --method-settings

    def needs(self, config: RunConfig) -> frozenset[str]:
        """The train stages it reads (critique.engine.strategies.TRAIN_STAGES)."""

    def prompt(self, run: RunContext, item: Item, vector, exclude: str | None = None
               ) -> tuple[Prompt, Retrieved] | None:
        """The prompt for ``item`` and the entries it shows (never ``exclude``'s); None when its memory for the
        item's pool is missing."""

    def learning_calls(self, run: RunContext) -> tuple[int, str]:
        """(calls it may still make to learn, beyond its test answers: its offline stage's, or an online method's
        after each answer; how that number is bounded), for the cost line; (0, "") for a method that makes none."""
