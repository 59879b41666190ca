"""The id of a memory entry, one definition for the engine that writes entries and the analysis and
probes that read them (the analysis may not import critique.engine)."""

from __future__ import annotations

SHARED_POOL = "all"  # the memory pool of data that is not preference data (one pool per user otherwise)


def pool_of(user: str | None) -> str:
    """The memory pool of a user's item: the user, or SHARED_POOL."""
    return user if user else SHARED_POOL


def entry_id(user: str | None, item_id: str) -> str:
    """USER/ITEM_ID for preference data (a user), ITEM_ID otherwise."""
    return f"{user}/{item_id}" if user else item_id


def version_id(note: str, version: int) -> str:
    """NOTE@VERSION: one version of a stream's note (critique.engine.memory.notes)."""
    return f"{note}@{version}"


def version_entries(versions: list[dict]) -> list[dict]:
    """The entry of each note version (memory/notes.jsonl records), its id the version's (NOTE@VERSION): what a
    stream's prompts showed, as credit by deletion deletes them one at a time."""
    return [{**v["entry"], "id": version_id(v["note"], v["version"])} for v in versions]
