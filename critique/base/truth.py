"""What the run directory says of the truth about a memory entry: the study's U."""

from __future__ import annotations


def initial_right(entry: dict) -> bool:
    """U = 1: the agent's initial answer to the entry's item is its gold label (the truth, whatever the
    critic was shown; the run's own belief is critique.engine.memory.selection.right)."""
    return entry.get("initial_answer") == entry.get("gold")
