"""The five test-stage strategies: which template, and which memory goes into the prompt."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Strategy:
    name: str
    template: str
    episodic: bool  # K retrieved train examples in the prompt
    semantic: bool  # the distilled advice in the prompt


STRATEGIES = {
    s.name: s
    for s in (
        Strategy("zero_shot", "performance_zero_shot.j2", episodic=False, semantic=False),
        Strategy("EP_LABEL", "performance_ep_label.j2", episodic=True, semantic=False),
        Strategy("EP_CRIT", "performance_ep_crit.j2", episodic=True, semantic=False),
        Strategy("SEM_CRIT", "performance_sem_crit.j2", episodic=False, semantic=True),
        Strategy("EP+SEM_CRIT", "performance_ep_sem_crit.j2", episodic=True, semantic=True),
    )
}
DEFAULT = tuple(STRATEGIES)
# The order in which one question's prompts are sent: each shares the longest prefix with the one before.
PREFIX_ORDER = ("zero_shot", "SEM_CRIT", "EP_LABEL", "EP_CRIT", "EP+SEM_CRIT")
PARTS = ("full", "local", "global")


def parse_strategies(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise ValueError(f"unknown strategy {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(STRATEGIES)}")
    return names
