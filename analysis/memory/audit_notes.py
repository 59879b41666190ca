"""The audit of a stream (critique stream): its memory is a store of versioned notes (memory/notes.jsonl), so the
audit reads each note's latest version (its entry, as any run's episodic entry) with its status, version and
the step and feedback that wrote it, and counts reuse over the stream's own prompts (stage stream), each of
which retrieved the notes as they stood at that step. Reads logs only."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs

NOTE = ("a stream: each note's latest version (status, version; a disabled note is never retrieved after it was "
        "disabled), reuse counted over the stream's own prompts, each of which saw the notes as they stood then")


def latest_entries(path: Path, problems: list[str]) -> tuple[list[dict], dict[str, dict]]:
    """(the entry of each note's latest version, in the order the notes were first written; note id -> that
    version)."""
    latest: dict[str, dict] = {}
    for version in logs.records(path, logs.NOTES, problems):
        latest[version["note"]] = version
    return [v["entry"] for v in latest.values()], latest


def add_note_fields(rows: list[dict], latest: dict[str, dict]) -> None:
    """Each audited entry's note fields, from its latest version: status, version, confidence, sources (the items
    it rests on), and the step, feedback and reason that wrote that version."""
    for row in rows:
        version = latest.get(row["id"]) or {}
        row.update({key: version.get(key) for key in ("status", "version", "confidence", "sources", "step",
                                                      "feedback", "why")})
