"""What the arm probes share (critique probe conditioning, priors and dose): the counts they sweep, and the calls
they still have to make."""

from __future__ import annotations

from critique.base.vocab import PROBE, TRAIN
from critique.engine.run_directory import pkey


def parse_counts(text, name: str) -> list[int]:
    """``"1,4,16"`` (or a list of whole numbers) as the sorted distinct counts; ValueError when one is not a whole
    number of at least 1. ``name``: what the counts are, in the plural (lengths, values), for the message."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    counts = []
    for part in parts:
        value = part.strip() if isinstance(part, str) else part
        whole = not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, str) and value.isdigit()))
        if not whole or int(value) < 1:
            raise ValueError(f"{name} must be whole numbers of at least 1, not {part!r}")
        counts.append(int(value))
    if not counts:
        raise ValueError(f"give at least one of the {name}")
    return sorted(set(counts))


def cost(run, arms: list[str]) -> int:
    """Calls at most: the train stage's still to do (an initial answer and a critique per train item), then per
    test item each of ``arms`` still to answer."""
    train = sum(pkey(TRAIN, None, i.user, i.id) not in run.predictions for i in run.dataset.train)
    test = sum(pkey(PROBE, a, i.user, i.id) not in run.predictions for i in run.dataset.test for a in arms)
    return 2 * train + test
