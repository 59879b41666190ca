"""The cost line's dollars (critique.base.cost): what the calls a command still has to make could cost at most,
and what they will likely cost.

- **At most**: every call with the longest prompt the run can send and a reply of --max-tokens, at the model's
  price (critique.llm.price). The longest prompt is bounded from the prompt sizes: the longest template of the
  run's prompt set, the task, K + 1 of the longest question, and K critiques and one advice of --max-tokens
  each (with many_shot, at least its longest prompt: the context's prompt limit). It is an upper bound, loose by
  design.
- **Likely**: the mean cost of the calls this experiment has already logged (a resumed run's calls.jsonl, at
  today's price), times the calls to make; absent when nothing is logged yet.
"""

from __future__ import annotations

from critique.base.vocab import MANY_SHOT
from critique.engine import many_shot, prompts
from critique.llm.price import unknown


def longest_prompt(run) -> int:
    """Tokens of the longest prompt the run can send (a bound from the prompt sizes)."""
    config, items = run.config, run.dataset.train + run.dataset.test
    folder = prompts.prompts_dir(config.prompts)
    template = max((len(p.read_text(encoding="utf-8")) for p in folder.glob("*.j2")), default=0)
    question = max((len(item.question) for item in items), default=0)
    text = "x" * (template + len(run.dataset.card.task) + (config.k + 1) * question)
    replies = (config.k + 1) * config.max_tokens  # K critiques in the examples and one advice, each a reply
    bound = run.llm.count_tokens([{"role": "user", "content": text}]) + replies
    if MANY_SHOT in config.strategies:  # as many examples as fit: the prompt limit (or every one)
        bound = max(bound, many_shot.longest_prompt(run))
    return bound


def likely_per_call(run) -> tuple[float, int] | None:
    """(mean dollars per call, calls it is the mean of) over the calls the run has logged; None when none."""
    price = run.llm.price
    logged = [r for r in run.logged.values() if r.get("error") is None]
    if price is None or not logged:
        return None
    total = sum(price.cost(r.get("prompt_tokens") or 0, r.get("completion_tokens") or 0) for r in logged)
    return total / len(logged), len(logged)


def dollars(run, calls: int) -> str:
    """The dollar part of a cost line for ``calls`` calls still to make."""
    price, config = run.llm.price, run.config
    if price is None:
        return f"dollars: {unknown(config.model)}"
    if price.source == "embedded":
        return "dollars: $0 (the embedded model runs in this process)"
    longest = longest_prompt(run)
    text = (f"dollars: at most ${calls * price.cost(longest, config.max_tokens):,.4f} (prompts of at most "
            f"{longest:,} tokens and {config.max_tokens:,}-token replies at {price.shown()})")
    likely = likely_per_call(run)
    if likely is not None:
        text += f", likely ${calls * likely[0]:,.4f} (the mean cost of the {likely[1]} calls logged here)"
    if config.max_cost is not None:
        text += f"; no call that could pass --max-cost ${config.max_cost:g} is made"
    return text
