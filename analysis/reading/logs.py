"""The one reader of run directories: the tables, the audit, the frames, the export and `critique run`'s own
table read a run directory's files through these functions, and nowhere else.

- `manifest(run)`: the header (critique.base.rundir.read_manifest).
- `rows(run, log, fields)`: every record of a log, only the fields asked for, one tuple per record in file
  order (analysis.reading.jsonl: the messages and response of a call are never parsed); `stages`: only the records
  of those stages, the other lines passed over unread.
- `predictions(run, stages)`: whole prediction records, the latest per item (a rerun's replaces a failed one);
  `labeled(prediction)`: it has a gold label to be judged against (a Learner's predict answers have none).
- `records(run, log)`, `record_chunks(run, log, size)`: whole records, all at once or a few at a time.
- `memory(run)`: the episodic entries (None when the run has none); `memory_document(run, name)`: a JSON file
  of the memory folder (semantic.json, demoted.json).

A log is named by its place in the run directory (PREDICTIONS, CALLS, EPISODIC, DROPPED, NOTES); a missing log reads
as no records, and a cut or unreadable line is skipped and reported in `problems`. The fields asked for are
fields of critique.base.records (tests/test_analysis_logs.py checks the analysis' field lists against it).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from critique.analysis.reading.jsonl import scan
from critique.base import rundir
from critique.base.records import flat

PREDICTIONS, CALLS = rundir.PREDICTIONS, rundir.CALLS
EPISODIC = f"{rundir.MEMORY}/episodic.jsonl"  # the critiques kept (critique.base.records.MEMORY_ENTRY)
DROPPED = f"{rundir.MEMORY}/dropped.jsonl"  # those --on-mismatch drop left out
NOTES = f"{rundir.MEMORY}/{rundir.NOTES}"  # a stream's notes, every version (critique.engine.memory.notes)
SEMANTIC, DEMOTED = "semantic.json", "demoted.json"  # documents of the memory folder


def manifest(run: str | Path) -> dict:
    """The run's manifest (FileNotFoundError when ``run`` is not a run directory)."""
    return rundir.read_manifest(run)


def rows(run: str | Path, log: str, fields: tuple[str, ...], problems: list[str] | None = None,
         exact: bool = False, stages=None) -> list[tuple]:
    """One tuple of ``fields`` per record of ``log`` (None where a record lacks one); ``stages``: only the
    records whose stage is one of them ("stage" among ``fields``); ``exact``: every line through json.loads."""
    where = None if stages is None else ("stage", frozenset(stages))
    return scan(Path(run) / log, fields, problems, exact, where)


def records(run: str | Path, log: str, problems: list[str] | None = None) -> list[dict]:
    """The whole records of ``log``."""
    path = Path(run) / log
    if not path.exists():
        return []
    found = (_parsed(line, path, number, problems)
             for number, line in enumerate(path.read_bytes().split(b"\n"), start=1))
    return [record for record in found if record is not None]


def record_chunks(run: str | Path, log: str, size: int, problems: list[str] | None = None,
                  errors: list[str] | None = None):
    """The whole records of ``log`` in lists of at most ``size``, read a line at a time (a large log is never
    held whole); a log that cannot be read ends the lists, said in ``errors``."""
    path = Path(run) / log
    if not path.exists():
        return
    chunk = []
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                record = _parsed(line, path, number, problems)
                if record is not None:
                    chunk.append(record)
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
    except OSError as exc:
        if errors is not None:
            errors.append(f"{path}: cannot be read ({exc}); left out")
        return
    if chunk:
        yield chunk


def predictions(run: str | Path, stages: tuple[str, ...] | None = None,
                problems: list[str] | None = None) -> list[dict]:
    """The final prediction record per (stage, strategy, user, item) of ``stages`` (all when None)."""
    found = records(run, PREDICTIONS, problems)
    if stages is not None:
        found = [r for r in found if r.get("stage") in stages]
    return rundir.latest(found)


def labeled(prediction: dict) -> bool:
    """The prediction was judged against a gold label (``correct`` true or false); a Learner's ``predict`` answers
    have none (``gold`` and ``correct`` null): never right, never wrong."""
    return prediction.get("gold") is not None


def memory(run: str | Path, problems: list[str] | None = None, log: str = EPISODIC) -> list[dict] | None:
    """The entries of the run's episodic memory (``log``: or those it dropped); None when it has none."""
    return records(run, log, problems) if (Path(run) / log).exists() else None


def memory_document(run: str | Path, name: str) -> dict | None:
    """A JSON document of the run's memory folder (SEMANTIC, DEMOTED); None when absent (ValueError when
    unreadable)."""
    path = Path(run) / rundir.MEMORY / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _parsed(line: bytes, path: Path, number: int, problems: list[str] | None) -> dict | None:
    """One line's record (an experiment's fields at the top level: critique.base.records.flat); None for a
    blank line, a line that is not an object, or a cut one (reported)."""
    if not line.strip():
        return None
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:  # NaN and Infinity, which orjson refuses; a byte that is not UTF-8 replaced
            record = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError:
            if problems is not None:
                problems.append(f"{path}:{number}: unreadable line skipped (cut by a crash?)")
            return None
    return flat(record) if isinstance(record, dict) else None
