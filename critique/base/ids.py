"""The id of a memory entry, one definition for the engine that writes entries and the analysis and
probes that read them (the analysis may not import critique.engine)."""

from __future__ import annotations


def entry_id(user: str | None, item_id: str) -> str:
    """USER/ITEM_ID for preference data (a user), ITEM_ID otherwise."""
    return f"{user}/{item_id}" if user else item_id
