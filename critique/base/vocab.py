"""The study's names: strategies, stages, critique parts, probes, ablations."""

from __future__ import annotations

ZERO_SHOT = "zero_shot"
EP_LABEL = "EP_LABEL"
EP_CRIT = "EP_CRIT"
SEM_CRIT = "SEM_CRIT"
EP_SEM_CRIT = "EP+SEM_CRIT"

STRATEGIES = (ZERO_SHOT, EP_LABEL, EP_CRIT, SEM_CRIT, EP_SEM_CRIT)
# The in-context learning baseline beside the five (critique.engine.many_shot): as many labeled train items as fit
# in the model's context, in a seeded order, no retrieval; a registered method, never in a run unless named.
MANY_SHOT = "many_shot"
_REGISTERED: list[str] = []  # the names of memory methods registered beside the five (critique.engine.methods)


def register_strategy(name: str) -> None:
    """Make ``name`` a strategy a run may take (--strategies): the name of a registered memory method."""
    if name not in STRATEGIES and name not in _REGISTERED:
        _REGISTERED.append(name)


def known_strategies() -> tuple[str, ...]:
    """The five strategies of the study, then the memory methods registered beside them."""
    return (*STRATEGIES, *_REGISTERED)


BASELINES = (ZERO_SHOT, EP_LABEL)
CRITIQUE_STRATEGIES = (EP_CRIT, SEM_CRIT, EP_SEM_CRIT)
# A critique strategy's budgeted variant (``EP+SEM_CRIT:budget``; critique.engine.field.budgeted): its train stage
# limited by --train-budget as the field's methods' offline stages are, so that all compare at one cost.
BUDGETED = ":budget"
BEST = EP_SEM_CRIT

# Critique fields shown in EP examples: both, the rationale, the reflection (the first is the default).
PARTS = ("full", "local", "global")

# Offline stages each critique strategy pays for (docs/method.md section 5, Table 5): the whole train stage (initial
# predictions, critiques, summary) for all three, EP_CRIT included, as the paper's printed break-even values count it.
OFFLINE_STAGES = {
    EP_CRIT: ("train_predict", "critique", "summary"),
    SEM_CRIT: ("train_predict", "critique", "summary"),
    EP_SEM_CRIT: ("train_predict", "critique", "summary"),
}

TEST = "test"
PREDICT = "predict"  # a Learner's predictions (critique.Learner.predict): its questions, without a label
TRAIN = "train_predict"
CRITIQUE = "critique"
RECRITIQUE = "recritique"  # a second critique call (--on-mismatch recritique)
SUMMARY = "summary"
PROBE = "probe"
CREDIT = "credit"  # the deletion test's calls (critique.experiments.credit.deletion)
CREDIT_NULL = "credit_null"  # its null control: identical prompts asked again, never from a cache
CREDIT_PRUNE = "credit_prune"  # held-out questions answered with a memory pruned by credit
# The credit test's strategies: the whole prompt, the prompt without one entry (without:ENTRY_ID), the null control.
CREDIT_FULL, CREDIT_WITHOUT, CREDIT_REPEAT = "full", "without:", "null"

STREAM = "stream"  # a stream's answers, one per step (critique.experiments.stream.loop); also its probe's name
STREAM_CRITIQUE = "stream_critique"  # the critique calls of its feedback

SUGGESTIBILITY = "suggestibility"
TRUTH = "truth"
LYING = "lying"

PREFERENCE = "preference"
# The project's generated controls (critique.datasets.controls): a positive control, where copying the label
# of the most similar shown train example is right, and a negative one, the same questions with labels drawn
# independently. A control is its own experiment: its points are never pooled with a study's datasets.
CONTROL_POS, CONTROL_NEG = "control-pos", "control-neg"
CONTROLS = {CONTROL_POS: "positive", CONTROL_NEG: "negative"}

# Ablation name -> the table that shows it (docs/method.md section 5, tables 6-8).
ABLATIONS = {"train_size": "table6", "parts": "table7", "k": "table8"}
# The values each ablation sweeps unless told otherwise (docs/method.md section 4).
ABLATION_VALUES = {"k": [1, 3, 5, 10], "train_size": [0.25, 0.5, 0.75, 1.0], "parts": ["local", "global", "full"],
                   "gate": [0.3, 0.5, 0.7]}
# The retrieval gate's sweep (docs/memory.md section 4; not a table of the paper): its own table, the gate table.
GATE = "gate"
# Answer-free checks of memory entries (critique verify; critique.experiments.verify): reorder asks an entry's
# question again with its options permuted.
REORDER = "reorder"
# sample:N asks the entry's question N times more (temperature > 0, never from a cache); judge:MODEL asks another
# model, without the label, whether the entry's answer is right.
SAMPLE = "sample"
JUDGE = "judge"
VERIFIERS = (REORDER, SAMPLE, JUDGE)
# De-inflation (critique deinflate; critique.experiments.deinflate): the entries a verifier flagged are demoted,
# marked doubtful or dropped; the budget-matched control demotes as many at random.
DEINFLATE = "deinflate"
DEMOTIONS = ("doubt", "drop")
# The overturn probe (critique probe overturn): a false critique alone, then with a true one, both orders.
OVERTURN = "overturn"
# The conditioning probe (critique probe conditioning): a preamble of the agent's own past outcomes, or of the
# procedures the critiques of the same answers drew, against none.
CONDITIONING = "conditioning"
# The revocable-priors probe (critique probe priors): EP_CRIT's notes marked as priors to drop on contradiction,
# against the same notes unmarked.
PRIORS = "priors"
# The dose-response probe (critique probe dose): EP_CRIT's prompt with K entries of the run's memory, or of another
# dataset's, K on a log scale.
DOSE = "dose"


def canonical_strategy(name: str) -> str:
    """A strategy name as the study spells it ('Zero-shot' -> 'zero_shot'); unknown names unchanged."""
    def squash(text: str) -> str:
        return text.strip().casefold().replace("-", "_").replace(" ", "_")

    known = {squash(s): s for s in STRATEGIES}
    return known.get(squash(str(name)), str(name).strip())
