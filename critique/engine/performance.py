"""The test-stage prompt of one strategy for one item: the memory it shows, chosen by the run's
retrieval settings (critique.engine.memory.selection), rendered from the strategy's template.

A pool with no critique in memory (none parsed, or every one dropped: ``empty_pool``) shows none: its EP_CRIT,
SEM_CRIT and EP+SEM_CRIT prompts are zero_shot's, as the run says when its memory is built.

When the gate or the budget leaves no episodic entry, the prompt is the memory-free one: zero_shot's
prompt for EP_LABEL and EP_CRIT, SEM_CRIT's for EP+SEM_CRIT (its advice stays: only the examples are
gated): the very messages, so the very request hash, of that strategy's prompt, which the run's log,
a matching run or the response cache then answers without a second call.
"""

from __future__ import annotations

from critique.base.vocab import EP_LABEL, SEM_CRIT, ZERO_SHOT
from critique.datasets.splits import Item
from critique.engine import agents
from critique.engine.memory import selection
from critique.engine.memory.episodic import Retrieved, pool_of
from critique.engine.memory.value import Memory
from critique.engine.strategies import STRATEGIES


def empty_pool(memory: Memory, user: str | None) -> bool:
    """No critique of the user's pool entered ``memory`` (none parsed, or --on-mismatch drop left none out): its
    critique strategies have nothing to show and answer with the memory-free prompt, zero_shot's."""
    return memory.episodic is not None and memory.episodic.size(user) == 0 and pool_of(user) not in memory.semantic


def in_order(config, examples: list[dict]) -> list[dict]:
    """Retrieved examples (nearest first) in the order the prompt shows them (``example_order``)."""
    return list(reversed(examples)) if config.example_order == "nearest-last" else list(examples)


def rendered(run, template: str, item: Item, shown: list[dict], advice: str | None) -> agents.Prompt:
    """The prompt of ``template`` for ``item`` showing the entries ``shown`` (nearest first; laid out in the run's
    example order) and ``advice``: what every critique strategy's prompt is, whoever chose what it shows."""
    return agents.performance_prompt(template, run.task, item, run.space, in_order(run.config, shown), advice,
                                     run.config.parts)


def performance_prompt(run, name: str, item: Item, vector, exclude: str | None, memory: Memory):
    """(prompt, entries) of strategy `name` for `item` (whose question encodes to `vector`) in the
    pipeline.Run `run`, over `memory` (critique.engine.memory.value.Memory: the train stage's, or one made
    elsewhere: a Learner's, a de-inflation arm's, a stream's notes, a budgeted strategy's), never showing the entry
    `exclude`; None when the strategy needs the semantic memory of the item's pool and there is none. The entries
    are a ``Retrieved``: a list, nearest first, with ``scores`` (each one's similarity to the question) and
    ``injected_tokens`` (the tokens their examples add to the prompt: the prompt's tokens less those of the same
    template without examples, counted with the model's tokenizer, each prompt once; None when the run neither
    gates nor budgets its examples: they are not counted then)."""
    strategy = STRATEGIES[name]
    if name != EP_LABEL and (strategy.episodic or strategy.semantic) and empty_pool(memory, item.user):
        return agents.performance_prompt(STRATEGIES[ZERO_SHOT].template, run.task, item, run.space, [], None,
                                         run.config.parts), Retrieved()
    advice = None
    if strategy.semantic:
        advice = memory.summary(item.user).get("advice")
        if not advice:
            return None

    def render(template: str, shown: list[dict]) -> agents.Prompt:
        return rendered(run, template, item, shown, advice)

    if not strategy.episodic:
        return render(strategy.template, []), Retrieved()
    counted: dict = {}  # entry ids shown -> the prompt's tokens (() : the template without examples), each once

    def tokens(shown: list[dict]) -> int:
        key = tuple(e["id"] for e in shown)
        if key not in counted:
            counted[key] = run.llm.count_tokens(render(strategy.template, shown).messages)
        return counted[key]

    def added(shown: list[dict]) -> int:  # the tokens the examples `shown` add to the prompt
        return tokens(shown) - tokens([])

    pool = memory.labels if name == EP_LABEL else memory.episodic
    examples = selection.choose(run.config, pool, vector, item.user, exclude, added)
    if not examples and selection.silent_when_empty(run.config):
        return render(STRATEGIES[SEM_CRIT if strategy.semantic else ZERO_SHOT].template, []), examples
    # Counted only where the run gates or budgets its examples (the gate table reads them): counting is
    # slow for the embedded model and may fetch a tokenizer for a hosted one; null (None) otherwise.
    measured = run.config.gate is not None or run.config.inject_budget is not None
    examples.injected_tokens = (added(examples) if measured else None) if examples else 0
    return render(strategy.template, examples), examples
