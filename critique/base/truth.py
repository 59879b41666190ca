"""What the run directory says of the truth about a memory entry and of the verdict it stores: the study's U
and r (docs/memory.md)."""

from __future__ import annotations


def initial_right(entry: dict) -> bool | None:
    """U = 1: the agent's initial answer to the entry's item is its gold label (the truth, whatever the
    critic was shown; the run's own belief is critique.engine.memory.selection.right). None: unknown, the entry's
    item has no gold label (a Learner's question learned with self feedback, ``Learner.learn(q, "self")``)."""
    if entry.get("gold") is None:
        return None
    return entry.get("initial_answer") == entry.get("gold")


def stored_verdict(entry: dict, asserted: str | None) -> int | None:
    """r: 1 when the entry says its initial answer was right, 0 when wrong, None when it says neither. A self
    critic's entry (--critic self) says so in its ``verdict``; a critic shown a label says so by the option
    its correct_answer asserts (``asserted``: right when that is the initial answer)."""
    verdict = entry.get("verdict")
    if verdict in ("right", "wrong"):
        return int(verdict == "right")
    return None if asserted is None else int(asserted == entry.get("initial_answer"))
