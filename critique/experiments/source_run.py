"""The one reader of another run's directory for the experiments: credit and pruning, verification, de-inflation,
the reuse of matching runs' calls, a stream's arms, the study's plan and the sweeps' summaries read the run they
build on through ``SourceRun``, never by joining paths of their own. It reads files only (the analysis has its
own reader, critique.analysis.reading.logs, for the tables)."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

from critique.base import records, rundir
from critique.base.rundir import EPISODIC as ENTRIES, SEMANTIC  # the memory files' names (the engine's too)


class SourceRun:
    """A run directory an experiment reads: its manifest, records and memory files."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def is_run(self) -> bool:
        """There is a run directory here (a manifest)."""
        return rundir.is_run_dir(self.path)

    @cached_property
    def manifest(self) -> dict:
        """Its manifest (read once; critique.base.rundir.read_manifest's errors when it is not a run's)."""
        return rundir.read_manifest(self.path)

    @property
    def probe(self) -> dict:
        """Its manifest's probe ({} for a plain run)."""
        return self.manifest.get("probe") or {}

    def status(self) -> str | None:
        """Its manifest's status as it is on disk now (None: no run here)."""
        return rundir.read_manifest(self.path).get("status") if self.is_run() else None

    def complete(self) -> bool:
        """Its work ended without an error (False where there is no run, or its manifest cannot be read)."""
        try:
            return self.status() == "complete"
        except (OSError, ValueError):
            return False

    def calls(self) -> list[dict]:
        """Every call record, in the order logged."""
        return rundir.read_jsonl(self.path / rundir.CALLS)

    def predictions(self, stage: str | None = None, strategy: str | None = None, *, latest: bool = False,
                    flat: bool = False) -> list[dict]:
        """Its prediction records (of ``stage`` and ``strategy`` when given); ``latest``: only the final one per
        question (a rerun's replaces a failed one); ``flat``: an experiment's fields by their names
        (critique.base.records.flat)."""
        found = rundir.read_jsonl(self.path / rundir.PREDICTIONS)
        if latest:
            found = rundir.latest(found)
        found = [p for p in found if (stage is None or p.get("stage") == stage)
                 and (strategy is None or p.get("strategy") == strategy)]
        return [records.flat(p) for p in found] if flat else found

    def memory_file(self, name: str) -> Path:
        """The path of memory/``name``."""
        return self.path / rundir.MEMORY / name

    def has_episodic(self) -> bool:
        return self.memory_file(ENTRIES).is_file()

    def episodic(self) -> list[dict]:
        """The entries of its episodic memory (memory/episodic.jsonl)."""
        return rundir.read_jsonl(self.memory_file(ENTRIES))

    def has_semantic(self) -> bool:
        return self.memory_file(SEMANTIC).exists()

    def semantic(self) -> dict[str, dict]:
        """Its semantic memory per pool ({} when it has none)."""
        path = self.memory_file(SEMANTIC)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def has_notes(self) -> bool:
        return self.memory_file(rundir.NOTES).exists()

    def notes(self) -> list[dict]:
        """Every version of every note of a stream (memory/notes.jsonl; [] when it wrote none)."""
        return rundir.read_jsonl(self.memory_file(rundir.NOTES)) if self.has_notes() else []

    def method_memory(self, name: str) -> dict | None:
        """Memory method ``name``'s memory document (memory/METHOD.json), or None when it kept none."""
        from critique.engine.method_memory import file_of

        path = file_of(self.path, name)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
