"""What the tables count in a run directory, kept between `critique tables` runs in the user's cache folder
(critique.base.paths.cache_root() / "tables"), never in the run directory.

A run's counts (analysis.reading.read.read_records: its predictions and calls tallied, the problems and errors met)
are used again only for the same logs read the same way by the same code: an entry holds the device, inode,
size and modification time of predictions.jsonl and calls.jsonl as they were before they were read, and is
named by the run's folder, the reading arguments and a digest of the modules that read and count. Anything
else reads the logs again. An entry is written only for logs unchanged for RACY_S seconds: a log rewritten
twice within its file system's timestamp resolution could otherwise keep its size and time. A cache that
cannot be read or written is passed over. bench/bench_tables.py times `critique tables` with the cache empty
and with it filled.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from pathlib import Path

import orjson

from critique.base import offline_totals, paths, records, rundir, vocab

FOLDER = "tables"
RACY_S = 2.0
LIMIT = 5000  # entries; past it, the first write of a process removes the older half
_CODE = ("consistency.py", "count_cache.py", "jsonl.py", "logs.py", "read.py", "tally.py")  # what counts, here


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """A digest of the source of the modules the counts depend on."""
    digest = hashlib.sha256()
    base = [Path(module.__file__) for module in (offline_totals, records, vocab)]
    for path in [Path(__file__).with_name(name) for name in _CODE] + base:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def identity(run: str) -> list | None:
    """(device, inode, size, modification time in ns) of the run's prediction and call logs (None for one
    that is absent); None when one cannot be looked at."""
    out = []
    for log in (rundir.PREDICTIONS, rundir.CALLS):
        try:
            found = (Path(run) / log).stat()
        except FileNotFoundError:
            out.append(None)
            continue
        except OSError:
            return None
        out.append([found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns])
    return out


def _entry(run: str, how: list) -> Path:
    name = json.dumps([run, str(Path(run).resolve()), how, _code()], default=str)
    return paths.cache_root() / FOLDER / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.json"


def load(run: str, how: list, logs: list) -> tuple | None:
    """The counts kept for ``run`` read ``how`` when its logs are still ``logs`` (`identity`), else None."""
    if logs is None:
        return None
    try:
        entry = orjson.loads(_entry(run, how).read_bytes())
        if entry["logs"] != logs:
            return None
        predictions, calls, problems, errors = entry["counts"]
        return ({tuple(key): _tally(counts) for key, counts in predictions},
                {key: _tally(counts) for key, counts in calls}, problems, errors)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(run: str, how: list, logs: list, counts: tuple) -> None:
    """Keep ``counts`` of ``run`` read ``how`` from its logs as they were (``logs``), if unchanged for RACY_S."""
    now = time.time_ns()
    if logs is None or any(log is not None and log[3] > now - RACY_S * 1e9 for log in logs):
        return
    predictions, calls, problems, errors = counts
    entry = {"logs": logs, "counts": [[[list(key), _listed(c)] for key, c in predictions.items()],
                                      [[key, _listed(c)] for key, c in calls.items()], problems, errors]}
    try:  # json writes a count that is no JSON number (NaN) as such, and orjson refuses to read it back
        path = _entry(run, how)
        _prune(path.parent)
        rundir.write_bytes_atomic(path, json.dumps(entry).encode("utf-8"))
    except (OSError, TypeError, ValueError):  # an unwritable cache
        pass


@functools.lru_cache(maxsize=None)
def _prune(folder: Path) -> None:
    """Keep the folder at most LIMIT entries (looked at once per process and folder)."""
    if not folder.is_dir():
        return
    entries = list(folder.glob("*.json"))
    if len(entries) > LIMIT:
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[:len(entries) - LIMIT // 2]:
            entry.unlink(missing_ok=True)


def _listed(tally: list) -> list:
    """A tally as JSON holds it: its counts per gold label, and per (gold label, answer), as lists."""
    return [*tally[:-2], [[label, n] for label, n in tally[-2].items()],
            [[gold, answer, n] for (gold, answer), n in tally[-1].items()]]


def _tally(listed: list) -> list:
    return [*listed[:-2], {label: n for label, n in listed[-2]},
            {(gold, answer): n for gold, answer, n in listed[-1]}]
