"""`critique memory list RUN_DIR` and `critique memory history RUN_DIR NOTE`: a run's notes, read from its
memory folder (a stream's memory/notes.jsonl, every version of every note; else the episodic memory a run built,
memory/episodic.jsonl). Reads files only."""

from __future__ import annotations

import json
from pathlib import Path

from critique.base.errors import UserError


def register(sub) -> None:
    memory = sub.add_parser("memory", help="read a run's notes")
    kinds = memory.add_subparsers(dest="memory", required=True)
    listing = kinds.add_parser("list", help="the notes of a run, one line each: a stream's notes as they stand "
                                            "(id, versions, status, the step that last wrote it, verdict, truth), "
                                            "else the entries of its episodic memory")
    listing.add_argument("run", metavar="RUN_DIR")
    listing.set_defaults(func=list_main)
    history = kinds.add_parser("history", help="every version of one note of a stream, oldest first")
    history.add_argument("run", metavar="RUN_DIR")
    history.add_argument("note", metavar="NOTE", help="the note's id (critique memory list)")
    history.set_defaults(func=history_main)


def _notes_path(run: str) -> Path:
    from critique.base.rundir import MEMORY
    from critique.engine.memory.notes import FILE

    return Path(run) / MEMORY / FILE


def list_main(args) -> int:
    from critique.base.rundir import MEMORY, read_jsonl
    from critique.engine.memory.episodic import ENTRIES

    notes, entries = _notes_path(args.run), Path(args.run) / MEMORY / ENTRIES
    if notes.exists():
        versions: dict[str, list[dict]] = {}
        for version in read_jsonl(notes):
            versions.setdefault(version["note"], []).append(version)
        print("note\tversions\tstatus\tstep\tfeedback\tverdict\ttruth")
        for note, written in versions.items():
            last = written[-1]
            print("\t".join(_shown(v) for v in (note, len(written), last["status"], last["step"], last["feedback"],
                                                 last["verdict"], last.get("truth"))))
        return 0
    if entries.exists():
        print("note\titem\tanswer\tasserted\tgold")
        for entry in read_jsonl(entries):
            print("\t".join(_shown(entry.get(k)) for k in ("id", "item_id", "initial_answer", "asserted", "gold")))
        return 0
    raise UserError(f"{Path(args.run) / MEMORY}: no notes (neither {notes.name} nor {entries.name}): is {args.run} a "
                    "run directory whose strategies built a memory?")


def _shown(value) -> str:
    return "-" if value is None else str(value)


def history_main(args) -> int:
    from critique.base.rundir import read_jsonl

    path = _notes_path(args.run)
    if not path.exists():
        raise UserError(f"{path}: no notes (only a stream writes them: critique stream)")
    versions = [v for v in read_jsonl(path) if v["note"] == args.note]
    if not versions:
        raise UserError(f"{path}: no note {args.note!r} (critique memory list {args.run} lists them)")
    for v in versions:
        entry = v["entry"]
        print(json.dumps({"version": v["version"], "replaces": v["replaces"], "status": v["status"], "step": v["step"],
                          "feedback": v["feedback"], "confidence": v["confidence"], "sources": v["sources"],
                          "asserted": entry.get("asserted"), "verdict": v["verdict"], "why": v["why"]}))
    return 0
