"""A memory method's memory as its offline stage leaves it, and the file the engine saves it in
(memory/<method>.json): its notes per pool, each with its sources, and how each pool's stage went. A method's
``learn`` returns its state with ``saved`` (a ``Saved``); the engine keeps the state and writes the file
(critique.engine.methods.keep_learned)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from critique.base import rundir


@dataclass
class Saved:
    """What memory/<method>.json holds: ``notes`` (pool -> its notes, each with ``id``, ``text`` and ``sources``,
    the train item ids it rests on), ``offline`` (pool -> its stage's ledger, critique.engine.field.offline.Offline:
    ``record()`` says how it went; or that record, a dict) and ``more`` (the method's own top-level fields)."""

    notes: dict[str, list[dict]]
    offline: dict
    more: dict = field(default_factory=dict)


def file_of(out: Path, name: str) -> Path:
    """memory/<method>.json (a name such as ``ace:nolabel`` is written ``ace_nolabel``)."""
    return Path(out) / rundir.MEMORY / ("".join(c if c.isalnum() or c in "-_." else "_" for c in name) + ".json")


def save(run, name: str, notes: dict[str, list[dict]], offline: dict, **more) -> None:
    """Method ``name``'s memory: its ``notes`` and the record of each pool's stage (``offline``: pool -> a ledger with
    ``record()``, or the record itself), per pool."""
    pools = {pool: {"notes": notes[pool], **_record(offline[pool])} for pool in notes}
    rundir.write_json_atomic(file_of(run.out, name), {"method": name, "pools": pools, **more})


def save_learned(run, name: str, saved: Saved) -> None:
    """The memory a method's ``learn`` returned, saved."""
    save(run, name, saved.notes, saved.offline, **saved.more)


def _record(ledger) -> dict:
    """What memory/<method>.json says of a pool's stage: its ledger's record, or the record a method gave."""
    return ledger.record() if callable(getattr(ledger, "record", None)) else dict(ledger)
