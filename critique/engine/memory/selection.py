"""Which retrieved episodic entries enter a prompt: the gate, contrast pairs, the token budget.

Retrieval that knows when to stay silent (docs/memory.md section 4). In this order:

1. Candidates: the K nearest entries of the item's pool (``retrieval nearest``), or, for
   ``retrieval contrast``, every entry of the pool, nearest first (never the item's own).
2. Gate (``--gate T``): only candidates whose similarity to the question is at least T
   (the cosine of the two embeddings, as FAISS scores them) remain.
3. Contrast (``--retrieval contrast``): pairs of similar examples, one the agent got right at
   its initial answer (``initial_answer == label``, the label the critic was shown; the self critic's
   ``verdict`` when the entry has one) and one it got wrong. Walking the gated
   candidates nearest first, the i-th nearest right entry is paired with the i-th nearest wrong
   one, for K // 2 pairs; when K is odd, or one kind runs out, the remaining places go to the
   nearest candidates not yet taken (of either kind), K entries in all (fewer when there are fewer
   candidates). The chosen entries are shown nearest first, like every other selection.
4. Budget (``--inject-budget N``): the longest nearest-first prefix of the chosen entries whose
   examples take at most N tokens (stopping at the first that would exceed it: a farther, shorter
   entry never jumps ahead of a nearer one).

A selection left empty by the gate or the budget is an empty memory section, and the prompt is
then the memory-free one (critique.engine.performance: zero_shot's prompt; SEM_CRIT's for EP+SEM_CRIT).
"""

from __future__ import annotations

from typing import Callable

from critique.engine.memory.episodic import Retrieved

NEAREST, CONTRAST = "nearest", "contrast"


def right(entry: dict) -> bool:
    """The agent's initial answer to the entry's item was right, as far as the run knows it (never the
    hidden gold label when the critic was not shown it): the self critic's ``verdict`` when the entry has
    one, else whether the answer is the label the critic was shown (``label``; ``gold`` in older logs)."""
    if entry.get("verdict") is not None:
        return entry["verdict"] == "right"
    return entry.get("initial_answer") == entry.get("label", entry.get("gold"))


def gated(found: Retrieved, threshold: float | None) -> Retrieved:
    """The entries of ``found`` whose similarity is at least ``threshold`` (all when None), in order."""
    if threshold is None:
        return found
    return found.keep([n for n, score in enumerate(found.scores) if score >= threshold])


def contrast(found: Retrieved, k: int) -> Retrieved:
    """K entries of ``found`` (nearest first) as right/wrong pairs (see the module's doc), nearest first."""
    rights = [n for n, e in enumerate(found) if right(e)]
    wrongs = [n for n, e in enumerate(found) if not right(e)]
    pairs = min(k // 2, len(rights), len(wrongs))
    chosen = set(rights[:pairs]) | set(wrongs[:pairs])
    rest = [n for n in range(len(found)) if n not in chosen]
    chosen |= set(rest[:max(0, k - len(chosen))])
    return found.keep(sorted(chosen))


def within_budget(found: Retrieved, budget: int | None, tokens: Callable[[int], int]) -> Retrieved:
    """The longest prefix of ``found`` whose examples take at most ``budget`` tokens; ``tokens(n)``
    counts the tokens the first n examples add to the prompt (all of ``found`` when budget is None)."""
    if budget is None:
        return found
    n = 0
    while n < len(found) and tokens(n + 1) <= budget:
        n += 1
    return found.keep(list(range(n)))


def choose(config, pool, vector, user: str | None, exclude: str | None, tokens: Callable[[list], int]) -> Retrieved:
    """The entries of the episodic memory ``pool`` that enter the prompt of a question (``vector``,
    of ``user``'s pool, never the item ``exclude``) under the run's ``config`` (k, retrieval, gate,
    inject_budget); ``tokens(entries)`` counts the tokens those entries' examples add to the prompt."""
    depth = pool.size(user) if config.retrieval == CONTRAST else config.k
    candidates = gated(pool.retrieve(vector, user, depth, exclude), config.gate)
    if config.retrieval == CONTRAST:
        candidates = contrast(candidates, config.k)
    return within_budget(candidates, config.inject_budget, lambda n: tokens(candidates[:n]))


def silent_when_empty(config) -> bool:
    """An empty selection is an empty memory section (the memory-free prompt) when the run gates or
    budgets its examples, or pairs them; with the default settings an episodic prompt keeps its own
    template even with no entry (as every run before these settings did: their request hashes stand)."""
    return config.gate is not None or config.inject_budget is not None or config.retrieval != NEAREST


def logged(found: Retrieved) -> dict:
    """The prediction record's fields of a selection (critique.base.records)."""
    tokens = found.injected_tokens  # None: not counted (a run without --gate and --inject-budget)
    return {"retrieved_scores": None if found.scores is None else list(found.scores),  # None: none by similarity
            "injected_tokens": None if tokens is None else int(tokens)}
