"""The five test-stage strategies: which template (of the run's prompt set, prompts/<set>/), and
which memory goes into the prompt."""

from __future__ import annotations

from dataclasses import dataclass

from critique.base.vocab import EP_CRIT, EP_LABEL, EP_SEM_CRIT, PARTS, SEM_CRIT, ZERO_SHOT


@dataclass(frozen=True)
class Strategy:
    name: str
    template: str
    episodic: bool  # K retrieved train examples in the prompt
    semantic: bool  # the distilled advice in the prompt


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
# The order in which one question's prompts are sent: each shares the longest prefix with the one before
# (in both sets EP+SEM_CRIT shares all its examples with EP_CRIT; the paper set's SEM_CRIT shares the
# question with zero_shot, and its EP_LABEL prompt differs from EP_CRIT's from the first sentence on).
PREFIX_ORDER = (ZERO_SHOT, SEM_CRIT, EP_LABEL, EP_CRIT, EP_SEM_CRIT)
__all__ = ["DEFAULT", "PARTS", "PREFIX_ORDER", "STRATEGIES", "Strategy", "parse_strategies"]


def parse_strategies(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise ValueError(f"unknown strategy {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(STRATEGIES)}")
    return names
