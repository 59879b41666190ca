"""Notes: the memory of a stream (critique.experiments.stream.loop) as a store of versioned notes.

A note is one episodic entry (a critique of one answered question) with its provenance: ``sources`` (the item
ids it came from), ``scope`` (dataset and user: the pool it is retrieved in), a ``confidence``, a ``status``
and a version chain. Nothing is overwritten: a change writes a new version that names the one it replaces
(``replaces``: ``NOTE@VERSION``). A version's status is ``active`` (as first written, or with its confidence
changed), ``revised`` (its entry replaced by new evidence: the corrected note, retrieved like an active one)
or ``disabled`` (never retrieved again). ``history(note)`` lists every version of a note, oldest first;
retrieval sees the latest version of each note unless it is disabled.

Each version also records for the analysis (never shown in a prompt): the step that wrote it (null: the
train memory), the feedback mode, the verdict it stores (r: 1 when its critique calls the answer right)
and the truth (U: 1 when the answer was right).

The store is memory/notes.jsonl, one JSON line per version in the order written (the fields:
critique.base.records.NOTE): a store ``attach``-ed to its folder appends each version as it is written, so the
file holds the notes as they stand while a stream runs (a stream replayed after a kill starts the file afresh
and writes the same versions again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from critique.base import records, rundir
from critique.base.ids import version_id
from critique.base.truth import initial_right, stored_verdict

FILE = rundir.NOTES
STATUSES = ("active", "revised", "disabled")
CONFIDENCE = 1.0  # a new note's confidence; each agreeing piece of evidence adds AGREEMENT
AGREEMENT = 1.0


def verdict(entry: dict) -> int | None:
    """r: the verdict the entry stores (critique.base.truth.stored_verdict, from the option it asserts)."""
    return stored_verdict(entry, entry.get("asserted"))


def truth(entry: dict) -> int | None:
    """U: 1 when the entry's answer was right (the gold label; for the analysis only); None when unknown (no gold
    label: critique.base.truth.initial_right)."""
    right = initial_right(entry)
    return None if right is None else int(right)


@dataclass
class Notes:
    dataset: str
    versions: list[dict] = field(default_factory=list)  # every version written, in order
    path: Path | None = None  # where each new version is appended (attach)

    def attach(self, folder: Path, fresh: bool) -> None:
        """Append each version written from now on to folder/FILE; ``fresh``: start the file with the versions
        held now (a stream starting or replaying), else it holds them already (a Learner's store)."""
        self.path = folder / FILE
        if fresh:
            rundir.write_jsonl_atomic(self.path, self.versions)

    def latest(self) -> dict[str, dict]:
        """Note id -> its latest version."""
        return {v["note"]: v for v in self.versions}

    def active(self) -> list[dict]:
        """The latest version of every note that is not disabled, in the order the notes were first written."""
        return [v for v in self.latest().values() if v["status"] != "disabled"]

    def history(self, note: str) -> list[dict]:
        return [v for v in self.versions if v["note"] == note]

    def add(self, entry: dict, *, step: int | None, feedback: str, why: str) -> dict:
        """A new note (version 1) holding ``entry``; its id is the entry's (ValueError when that note exists:
        a change is a new version, ``change``)."""
        if any(v["note"] == entry["id"] for v in self.versions):
            raise ValueError(f"note {entry['id']!r} exists: a change is a new version of it")
        return self._write(entry["id"], 1, None, "active", entry, [entry["item_id"]], CONFIDENCE, step, feedback, why)

    def change(self, note: str, *, status: str, step: int, feedback: str, why: str, evidence: str,
               entry: dict | None = None, confidence: float | None = None) -> dict:
        """A new version of ``note`` with ``status`` (STATUSES), its entry (default: the same) and confidence
        (default: the same); ``evidence``, the item id that caused it, joins its sources."""
        if status not in STATUSES:
            raise ValueError(f"a note's status is one of {', '.join(STATUSES)}, not {status!r}")
        old = self.latest()[note]
        sources = list(dict.fromkeys([*old["sources"], evidence]))
        return self._write(note, old["version"] + 1, version_id(note, old["version"]), status, entry or old["entry"],
                           sources, old["confidence"] if confidence is None else confidence, step, feedback, why)

    def _write(self, note: str, version: int, replaces: str | None, status: str, entry: dict, sources: list[str],
               confidence: float, step: int | None, feedback: str, why: str) -> dict:
        record = records.make("note", note=note, version=version, replaces=replaces, status=status, sources=sources,
                              scope={"dataset": self.dataset, "user": entry.get("user")}, confidence=confidence,
                              step=step, feedback=feedback, verdict=verdict(entry), truth=truth(entry), why=why,
                              entry=entry)
        self.versions.append(record)
        if self.path is not None:
            rundir.append_jsonl(self.path, record)
        return record

    def save(self, folder: Path) -> None:
        rundir.write_jsonl_atomic(folder / FILE, self.versions)

    def holds(self, entry: dict) -> bool:
        """The latest version of the note of ``entry``'s id holds this very entry."""
        latest = self.latest().get(entry["id"])
        return latest is not None and latest["entry"] == entry

    @classmethod
    def load(cls, folder: Path, dataset: str) -> "Notes":
        path = folder / FILE
        return cls(dataset, rundir.read_jsonl(path) if path.exists() else [])
