"""``many_shot``: the in-context learning baseline that memory is meant to beat. Each question is shown as many
labeled train items of its pool as fit in the model's context, before it, with no retrieval, no embedding and no
train-stage call (a method registered beside the five: critique.engine.methods).

- **Examples**: each labeled train item as EP_LABEL shows an example (the same macro of each prompt set; in the
  turns set an earlier exchange answered with the label), less the initial response, which it has not made. The
  label is the one the run has without a call (critique.engine.memory.critic.shown_labels): the gold label; under
  ``--critic noisy:R`` the label the critic is shown (a seeded fraction flipped, as EP_LABEL shows it); under
  ``--critic self`` only the ``--label-budget`` items' (the other items have none to show).
- **Order** (``ORDER``): each pool's train items by their seeded rank (critique.datasets.subsets.seeded_rank of the
  run's ``--seed``, the item's user and id, salt ``many_shot``): a seeded shuffle of the train split in which an
  item's place depends on no other item. Every prompt shows a prefix of it, first item first.
- **Count**, decided once per run and pool: the most examples (a prefix of the order) with which the prompt of the
  pool's longest test question (the one whose prompt has the most tokens, counted with the run's tokenizer) still
  fits the model's context: the window less the reply's room (critique.llm.context.prompt_limit), the check every
  request passes before it is sent (``LLM.overflows``); every example when the window is unknown. So every test
  question of a pool sees the same examples. A question whose own prompt is longer than that one's (a Learner's
  new question) is shown the longest prefix of them that fits beside it; one with none is asked with zero_shot's
  prompt (the same request, answered once).
- **Records**: the manifest's ``many_shot`` says the order rule, and per pool the examples counted, the labeled
  items there were and the test item the count was fitted to; each prediction's ``retrieved`` lists the examples
  its prompt showed, in order (``retrieved_scores`` and ``injected_tokens`` null: none was chosen by similarity).

``--k``, ``--gate``, ``--inject-budget``, ``--retrieval`` and ``--example-order`` do not apply to it.
"""

from __future__ import annotations

from critique.base.ids import pool_of
from critique.base.vocab import MANY_SHOT, ZERO_SHOT
from critique.datasets.splits import Item
from critique.datasets.subsets import seeded_rank
from critique.engine import agents
from critique.engine.memory.critic import shown_labels
from critique.engine.memory.episodic import Retrieved, entry_id
from critique.engine.methods import Method, register
from critique.engine.strategies import MANY_SHOT_TEMPLATE, STRATEGIES
from critique.llm import context

ORDER = ("each pool's labeled train items in the order of seeded_rank(seed, user, item id, 'many_shot') "
         "(critique.datasets.subsets: a seeded shuffle); every prompt shows a prefix of that order")


def ordered(run) -> dict[str, list[dict]]:
    """Pool -> its labeled train items as examples (``agents.labeled_example``), in the stated order (ORDER)."""
    config = run.config
    labels = shown_labels(run.dataset.train, config.critic, config.label_budget, config.seed, run.space)
    pools: dict[str, list[dict]] = {}
    for item in sorted(run.dataset.train, key=lambda i: seeded_rank(config.seed, i.user, i.id, MANY_SHOT)):
        label = labels[entry_id(item)]["label"]
        if label is not None:
            pools.setdefault(pool_of(item.user), []).append(agents.labeled_example(item, label))
    return pools


def render(run, item: Item, examples: list[dict]) -> agents.Prompt:
    """many_shot's prompt of ``item`` with ``examples``; zero_shot's (the very request) when there are none."""
    template = MANY_SHOT_TEMPLATE if examples else STRATEGIES[ZERO_SHOT].template
    return agents.performance_prompt(template, run.task, item, run.space, examples, None, run.config.parts)


def fitting(run, item: Item, examples: list[dict]) -> int:
    """The most of ``examples`` (a prefix) whose prompt with ``item`` is sent (does not overflow the context)."""
    if run.llm.context_window is None or not run.llm.overflows(render(run, item, examples).messages):
        return len(examples)
    low, high = 0, len(examples) - 1  # low: fits (none: the memory-free prompt); high + 1: does not
    while low < high:
        middle = (low + high + 1) // 2
        if run.llm.overflows(render(run, item, examples[:middle]).messages):
            high = middle - 1
        else:
            low = middle
    return low


def longest(run, pool: str) -> Item:
    """The pool's test question whose prompt has the most tokens (the first of equals, in the test split's order;
    the most characters where the window is unknown: nothing is counted then); an empty question when the pool has
    none (a Learner's run)."""
    questions = [item for item in run.dataset.test if pool_of(item.user) == pool]
    if not questions:
        return Item("", "", "", None if pool == pool_of(None) else pool)
    if run.llm.context_window is None:
        sizes = [len(item.question) for item in questions]
    else:
        sizes = [run.llm.count_tokens(render(run, item, []).messages) for item in questions]
    return questions[sizes.index(max(sizes))]


def chosen(run) -> dict:
    """The run's examples, decided once (kept in ``run.learned``): {"shown": pool -> the examples every test question
    of the pool sees, "fitted": pool -> the question they were fitted to, "record": the manifest's many_shot}."""
    if MANY_SHOT not in run.learned:
        pools = ordered(run)
        fitted = {pool: longest(run, pool) for pool in sorted(pools)}
        shown = {pool: examples[:fitting(run, fitted[pool], examples)] for pool, examples in sorted(pools.items())}
        window = run.llm.context_window
        record = {"order": ORDER, "prompt_limit": None if window is None else context.prompt_limit(
                      window, run.config.max_tokens),
                  "pools": {pool: {"examples": len(shown[pool]), "labeled": len(pools[pool]),
                                   "fitted_to": fitted[pool].id if window is not None and fitted[pool].id else None}
                            for pool in sorted(pools)}}
        run.learned[MANY_SHOT] = {"shown": shown, "fitted": fitted, "record": record}
    return run.learned[MANY_SHOT]


def longest_prompt(run) -> int:
    """Tokens of many_shot's longest prompt (the cost line's bound): the prompt limit, or every example with the
    longest question where the window is unknown."""
    window = run.llm.context_window
    if window is not None:
        return context.prompt_limit(window, run.config.max_tokens)
    made = chosen(run)
    return max((run.llm.count_tokens(render(run, made["fitted"][pool], shown).messages)
                for pool, shown in made["shown"].items()), default=0)


class ManyShot(Method):
    """many_shot as a memory method: no train stage, the run's examples before each question."""

    name = MANY_SHOT

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def prompt(self, run, item: Item, vector, exclude: str | None = None):
        shown = [e for e in chosen(run)["shown"].get(pool_of(item.user), []) if e["item_id"] != exclude]
        shown = shown[:fitting(run, item, shown)]  # all of them, unless the question's own length forces fewer
        found = Retrieved(shown, None)
        found.injected_tokens = None  # not counted
        return render(run, item, shown), found


register(ManyShot())
