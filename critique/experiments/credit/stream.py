"""Credit by deletion on a stream (critique.experiments.credit.deletion with a ``critique stream`` run as its source).

A stream's memory changed at every step, so what is credited is each note **version** a step's prompt showed
(memory/notes.jsonl; its id NOTE@VERSION, as the step's ``retrieved_versions`` names it): each step's EP_CRIT
prompt is rebuilt from the versions it showed, in their order, and asked again without each of them. The
verdicts and statuses the notes had then are in their entries (a demoted note shows its doubt mark, as it was
shown), so the full prompt is the very request the stream logged. Only ``--on test`` and ``--on test-half``
(the stream's steps are its test questions); a stream that keeps advice (``--refresh-every``) is refused: its
prompts' advice changed with the stream too."""

from __future__ import annotations

from pathlib import Path

from critique.base import rundir, vocab
from critique.base.errors import UserError
from critique.base.ids import version_entries
from critique.base.vocab import EP_CRIT
from critique.experiments.source_run import SourceRun


def is_stream(manifest: dict) -> bool:
    return (manifest.get("probe") or {}).get("name") == vocab.STREAM


def read(source: Path, manifest: dict) -> dict:
    """What credit reads of a stream: every note version's entry, and no semantic memory."""
    run = SourceRun(source)
    if not run.has_notes():
        raise UserError(f"{source}: no {rundir.MEMORY}/{rundir.NOTES} (the stream wrote no note to credit)")
    return {"path": source, "manifest": manifest, "entries": version_entries(run.notes()),
            "semantic": {}, "stream": True}


def refuse(manifest: dict, source: Path, strategy: str, on: str) -> None:
    """UserError for what credit cannot rebuild of a stream."""
    probe = manifest.get("probe") or {}
    if probe.get("refresh_every"):
        raise UserError(f"{source}: a stream that keeps advice (--refresh-every {probe['refresh_every']}): its "
                        "prompts' advice changed at every refresh, and credit rebuilds EP_CRIT's prompts only")
    if strategy != EP_CRIT:
        raise UserError(f"{source}: a stream answers with {EP_CRIT}: credit it with --strategy {EP_CRIT}")
    if on == "train":
        raise UserError(f"{source}: a stream's notes are credited on its steps (--on test or test-half); its train "
                        "memory is the study's, credited on the plain run (critique credit RUN --on train)")


def vectors(run, entries: list[dict]) -> dict:
    """Version id -> its question's vector (the run's encoder)."""
    encoded = run.encoder.encode([e["question"] for e in entries]) if entries else []
    return dict(zip((e["id"] for e in entries), encoded))


def steps(source: dict) -> list[dict]:
    """The stream's step predictions, their fields by name (retrieved_versions)."""
    return SourceRun(source["path"]).predictions(vocab.STREAM, flat=True)


def cases(source: dict, answered, skipped: list[str], case) -> list:
    """Each answered step's prompt (``answered``: (step, item) pairs, credit.answered; ``case``: credit.Case),
    rebuilt from the note versions it showed."""
    by_id = {e["id"]: e for e in source["entries"]}
    found, empty = [], 0
    for p, item in answered:
        shown = p.get("retrieved_versions") or []
        if not shown:
            empty += 1
            continue
        missing = [v for v in shown if v not in by_id]
        if missing:
            skipped.append(f"{item.id}: showed {', '.join(missing)}, not in memory/notes.jsonl")
            continue
        found.append(case(item, [by_id[v] for v in shown], None, p["request_hash"]))
    if empty:
        skipped.append(f"{empty} steps showed no note (nothing to delete)")
    return found
