"""The five test-stage strategies of the study: which template (of the run's prompt set, prompts/<set>/), which
memory goes into the prompt, and which train stages that memory needs. They are memory methods over the
critique memory (critique.engine.methods, where other methods are registered beside them)."""

from __future__ import annotations

from dataclasses import dataclass

from critique.base.vocab import CRITIQUE, EP_CRIT, EP_LABEL, EP_SEM_CRIT, PARTS, SEM_CRIT, SUMMARY, TRAIN, ZERO_SHOT

TRAIN_STAGES = (TRAIN, CRITIQUE, SUMMARY)


@dataclass(frozen=True)
class Strategy:
    """One of the five strategies: which template (of the run's prompt set, prompts/<set>/), and which memory
    goes into the prompt."""

    name: str
    template: str
    episodic: bool  # K retrieved train examples in the prompt
    semantic: bool  # the distilled advice in the prompt

    def needs(self, config) -> frozenset[str]:
        if self.semantic:
            return frozenset(TRAIN_STAGES)
        if self.name == EP_CRIT:
            return frozenset({TRAIN, CRITIQUE})
        if self.name == EP_LABEL:  # with a self critic, the label it shows is the critic's believed answer
            return frozenset({TRAIN, CRITIQUE} if config.critic == "self" else {TRAIN})
        return frozenset()


STRATEGIES = {
    s.name: s
    for s in (
        Strategy(ZERO_SHOT, "performance_zero_shot.j2", episodic=False, semantic=False),
        Strategy(EP_LABEL, "performance_ep_label.j2", episodic=True, semantic=False),
        Strategy(EP_CRIT, "performance_ep_crit.j2", episodic=True, semantic=False),
        Strategy(SEM_CRIT, "performance_sem_crit.j2", episodic=False, semantic=True),
        Strategy(EP_SEM_CRIT, "performance_ep_sem_crit.j2", episodic=True, semantic=True),
    )
}
DEFAULT = tuple(STRATEGIES)
# many_shot's template (critique.engine.many_shot, a method beside the five): its examples are labeled train items,
# each shown as EP_LABEL shows one; the templates whose examples show their label (the turns set: as the reply).
MANY_SHOT_TEMPLATE = "performance_many_shot.j2"
LABEL_TEMPLATES = (STRATEGIES[EP_LABEL].template, MANY_SHOT_TEMPLATE)
# The order in which one question's prompts are sent: each shares the longest prefix with the one before
# (in both sets EP+SEM_CRIT shares all its examples with EP_CRIT; the paper set's SEM_CRIT shares the
# question with zero_shot, and its EP_LABEL prompt differs from EP_CRIT's from the first sentence on).
PREFIX_ORDER = (ZERO_SHOT, SEM_CRIT, EP_LABEL, EP_CRIT, EP_SEM_CRIT)
__all__ = ["DEFAULT", "LABEL_TEMPLATES", "MANY_SHOT_TEMPLATE", "PARTS", "PREFIX_ORDER", "STRATEGIES",
           "TRAIN_STAGES", "Strategy"]
