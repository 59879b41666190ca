"""The study's names: strategies, stages, critique parts, probes, ablations."""

from __future__ import annotations

ZERO_SHOT = "zero_shot"
EP_LABEL = "EP_LABEL"
EP_CRIT = "EP_CRIT"
SEM_CRIT = "SEM_CRIT"
EP_SEM_CRIT = "EP+SEM_CRIT"

STRATEGIES = (ZERO_SHOT, EP_LABEL, EP_CRIT, SEM_CRIT, EP_SEM_CRIT)
BASELINES = (ZERO_SHOT, EP_LABEL)
CRITIQUE_STRATEGIES = (EP_CRIT, SEM_CRIT, EP_SEM_CRIT)
BEST = EP_SEM_CRIT

# Critique fields shown in EP examples: both, the rationale, the reflection (the first is the default).
PARTS = ("full", "local", "global")

# Offline stages each critique strategy pays for (SPEC section 5, Table 5).
OFFLINE_STAGES = {
    EP_CRIT: ("train_predict", "critique"),
    SEM_CRIT: ("train_predict", "critique", "summary"),
    EP_SEM_CRIT: ("train_predict", "critique", "summary"),
}

TEST = "test"
TRAIN = "train_predict"
CRITIQUE = "critique"
RECRITIQUE = "recritique"  # a second critique call (--on-mismatch recritique)
SUMMARY = "summary"
PROBE = "probe"

SUGGESTIBILITY = "suggestibility"
TRUTH = "truth"
LYING = "lying"

PREFERENCE = "preference"

# Ablation name -> the table that shows it (SPEC section 5, tables 6-8).
ABLATIONS = {"train_size": "table6", "parts": "table7", "k": "table8"}
# The values each ablation sweeps unless told otherwise (SPEC section 4).
ABLATION_VALUES = {"k": [1, 3, 5, 10], "train_size": [0.25, 0.5, 0.75, 1.0], "parts": ["local", "global", "full"]}


def canonical_strategy(name: str) -> str:
    """A strategy name as the study spells it ('Zero-shot' -> 'zero_shot'); unknown names unchanged."""
    def squash(text: str) -> str:
        return text.strip().casefold().replace("-", "_").replace(" ", "_")

    known = {squash(s): s for s in STRATEGIES}
    return known.get(squash(str(name)), str(name).strip())
