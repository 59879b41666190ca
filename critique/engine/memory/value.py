"""The critique memory as a value: what the train stage leaves for the test stage. ``Run.train_stage`` returns it,
and whoever asks a test question with one of the five strategies hands it on (``Run.test_stage``,
``critique.engine.question.ask``, ``critique.engine.performance.performance_prompt``); a memory made elsewhere is
the same value: a Learner's fitted memory, a de-inflation arm's demoted one, a stream's notes, credit's pruned one.
Nothing of it is kept on the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from critique.base.ids import pool_of

if TYPE_CHECKING:
    from critique.engine.memory.episodic import EpisodicMemory


@dataclass(frozen=True)
class Memory:
    """The memory the critique strategies show: ``episodic``, the critiques (EP_CRIT's and EP+SEM_CRIT's examples;
    None when the critique stage did not run); ``labels``, EP_LABEL's pool (every train item with the label its
    example shows; None when the critique stage did not run and no strategy shows it); ``semantic``, each pool's
    semantic memory record (the advice of SEM_CRIT and EP+SEM_CRIT; empty when the summary did not run)."""

    episodic: EpisodicMemory | None = None
    labels: EpisodicMemory | None = None
    semantic: dict[str, dict] = field(default_factory=dict)

    def summary(self, user: str | None) -> dict:
        """The semantic memory record of ``user``'s pool ({} when the pool has none)."""
        return self.semantic.get(pool_of(user)) or {}
