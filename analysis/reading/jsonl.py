"""Read chosen top-level fields of a JSON-lines log, fast.

A call record carries the rendered prompt and the raw response, so `calls.jsonl` is
mostly text the tables never look at; `json.loads` on every line costs seconds at the
study's scale. The tables read few of its records (the critiques and summaries), so this
reader finds those lines by their stage in the raw bytes, and parses only them.

Why that is safe for the run-directory format: inside a JSON string every `"` is escaped
as `\\"` and every newline as `\\n`, so a raw newline ends a record and the bytes
`"name":` (closing quote unescaped) occur only where an object key is written. The format
writes each field once, at the top level of a record or, for an experiment's own fields, once
in its `experiment` object (its other nested values, `messages` and `retrieved`, use other
keys, and an experiment's field names are none of the record's: critique.base.records.declare),
so the lines holding `"stage": "summary"` are the summaries' and perhaps a few more (a nested
key of that name), which the parsed records then leave out; a large log is mapped, not copied,
for that search. The lines chosen, or all of a log of short records (predictions), are parsed
at once by msgspec into the fields asked for alone (the others are passed over, never built), an
experiment's fields read by their names alone (records.flat). Whenever a line is not as expected --
not one JSON object, a blank line, a NaN -- the whole file takes the plain path, `json.loads` line by
line. A last line without its newline (cut by a killed writer) always takes the plain path: it is
kept if it parses, else skipped and reported, as `critique.base.rundir.read_jsonl` does.

Records come back as rows: one tuple of the wanted fields per record.
"""

from __future__ import annotations

import functools
import json
import mmap
import re
import typing
from operator import attrgetter, itemgetter
from pathlib import Path

import msgspec
import orjson

from critique.base.records import flat

_BACKSLASH = 92

Row = tuple  # the wanted fields of one record, in the order asked for


def _plain(data: bytes, first_line: int, fields: tuple[str, ...], path: Path,
           problems: list[str] | None) -> list[Row]:
    rows = []
    for number, line in enumerate(data.split(b"\n"), start=first_line):
        body = line.strip()
        if not body:
            continue
        try:
            record = json.loads(body.decode("utf-8", errors="replace"))
        except ValueError:
            record = None
        if not isinstance(record, dict):
            if problems is not None:
                problems.append(f"{path}:{number}: unreadable line skipped (cut by a crash?)")
            continue
        record = flat(record)
        rows.append(tuple(record.get(f) for f in fields))
    return rows


Where = tuple[str, frozenset]  # (field, the values of it that select a record)


def _selected(data: bytes, end: int, where: Where) -> bytes:
    """The whole lines of data[:end] whose `where` field holds one of the chosen values.

    Lines are found by the bytes `"field": "value"` (see the module docstring for why an
    unescaped quote pair like that is a key and its value); the other lines are not read.
    """
    key, values = where
    chosen = b"|".join(re.escape(json.dumps(v).encode("utf-8")) for v in sorted(values))
    # a literal start, so the regex engine scans for it fast; the byte before it is checked below
    pattern = re.compile(b'"' + re.escape(key.encode("utf-8")) + b'":[ \t]*(?:' + chosen + b")[ \t]*[,}]")
    parts, rfind, find = [], data.rfind, data.find
    stop = -1
    for found in pattern.finditer(data, 0, end):
        if found.start() < stop or data[found.start() - 1] == _BACKSLASH:  # a line already taken, or in a string
            continue
        stop = find(b"\n", found.end() - 1, end)
        parts.append(data[rfind(b"\n", 0, found.start()) + 1:stop + 1])
    return b"".join(parts)


def _whole(data: bytes, end: int, fields: tuple[str, ...]) -> list[Row] | None:
    """Rows of the whole lines in data[:end], parsed at once as one JSON array (short records: one call
    costs half of one per line): by msgspec into the fields alone, the others passed over (`_decoded`), or,
    where a field is asked for twice or is the experiment itself, by orjson (a third less than json.loads);
    None when a line is not one JSON object."""
    body = data[:end]  # whole lines: it ends with a newline
    lines = body.count(b"\n")
    if lines == len(body):  # nothing, or blank lines alone
        return []
    # every newline but the last one a comma (a blank line makes two in a row: not JSON); the last one is blank space
    array = b"[" + body.replace(b"\n", b",", lines - 1) + b"]"
    try:
        if fields and EXPERIMENT not in fields and len(set(fields)) == len(fields):
            return _decoded(array, lines, fields)
        records = orjson.loads(array)
    except ValueError:  # msgspec's and orjson's errors included; NaN too, which the plain path reads
        return None
    if len(records) != lines or not all(type(r) is dict for r in records):
        return None  # a blank line, a line holding two values, or one that is not an object
    if b'"experiment":' in body:  # an experiment's fields, read by their names (critique.base.records.flat)
        records = list(map(flat, records))
    return _taken(records, fields)


EXPERIMENT = "experiment"  # a prediction's object of its experiment's own fields (critique.base.records)


def _decoded(array: bytes, lines: int, fields: tuple[str, ...]) -> list[Row] | None:
    """The rows of ``fields`` of a JSON array of ``lines`` objects (None when it holds more: a line of two); a
    record with an experiment's fields gives them by their names (critique.base.records.flat), as json.loads
    and flat read it."""
    found = _decoder(fields).decode(array)  # a line that is no object: ValidationError
    if len(found) != lines:
        return None
    rows, experiments = _getters(fields)
    rows = list(map(rows, found)) if len(fields) > 1 else [(row,) for row in map(rows, found)]
    if any(map(experiments, found)):
        for i, experiment in enumerate(map(experiments, found)):
            if experiment:
                record = flat({**dict(zip(fields, rows[i])), EXPERIMENT: experiment})
                rows[i] = tuple(record.get(f) for f in fields)
    return rows


@functools.lru_cache(maxsize=None)
def _decoder(fields: tuple[str, ...]) -> msgspec.json.Decoder:
    """A decoder of a JSON array of objects into one struct per object that holds ``fields`` and the experiment's
    object alone (None where an object lacks one; the other fields are passed over, never built): what json.loads
    gives of them, or an error where a line is not strict JSON (NaN, a lone surrogate, bytes that are not UTF-8)
    or not an object."""
    names = {f"f{i}": name for i, name in enumerate((*fields, EXPERIMENT))}
    row = msgspec.defstruct("Row", [(name, typing.Any, None) for name in names], rename=names, gc=False)
    return msgspec.json.Decoder(list[row])


@functools.lru_cache(maxsize=None)
def _getters(fields: tuple[str, ...]) -> tuple[attrgetter, attrgetter]:
    """Getters of a `_decoder` struct's fields (a tuple of them; the one value with one field) and experiment."""
    return attrgetter(*(f"f{i}" for i in range(len(fields)))), attrgetter(f"f{len(fields)}")


def _taken(records: list[dict], fields: tuple[str, ...]) -> list[Row]:
    """The rows of `fields` of parsed records: by one getter when every record has every field but the last
    few, which none has (a field of newer logs, or of some experiments' records), else field by field."""
    first = records[0]
    have = next((i for i, f in enumerate(fields) if f not in first), len(fields))
    missing = fields[have:]
    if have > 1 and not any(f in record for f in missing for record in records):
        try:
            rows = list(map(itemgetter(*fields[:have]), records))
        except KeyError:  # a record lacks a field the first one has
            pass
        else:
            pad = (None,) * len(missing)
            return [row + pad for row in rows] if pad else rows
    return [tuple(map(record.get, fields)) for record in records]


def _chosen(rows: list[Row], fields: tuple[str, ...], where: Where | None) -> list[Row]:
    if where is None:
        return rows
    index = fields.index(where[0])
    return [row for row in rows if row[index] in where[1]]


def _contents(path: Path, mapped: bool):
    """The bytes of ``path``; mapped (not copied into this process) when ``mapped`` and not empty."""
    if not mapped or path.stat().st_size == 0:
        return path.read_bytes()
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def scan(path: str | Path, fields: tuple[str, ...], problems: list[str] | None = None,
         exact: bool = False, where: Where | None = None) -> list[Row]:
    """One row per whole record of `path`: its `fields` in order (None where a record lacks one).

    where=(field, values): only the records whose `field` is one of `values` (`field` must be
    among `fields`); the other lines are passed over without parsing them (for the long
    records of calls.jsonl). Without `where`, short records are parsed with one orjson call.
    exact=True parses every line with `json.loads` (the reference the fast path is tested
    against). A missing file reads as no records.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = _contents(path, where is not None and not exact)
    try:
        return _rows(data, path, fields, problems, exact, where)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _rows(data, path: Path, fields: tuple[str, ...], problems: list[str] | None, exact: bool,
          where: Where | None) -> list[Row]:
    end = data.rfind(b"\n") + 1
    rows = None
    if not exact and where is None:
        rows = _whole(data, end, fields)
    elif not exact:
        lines = _selected(data, end, where)
        rows = _whole(lines, len(lines), fields)
    if rows is None:
        return _chosen(_plain(data[:], 1, fields, path, problems), fields, where)
    tail = data[end:]
    if tail.strip():
        rows += _plain(tail, data[:end].count(b"\n") + 1, fields, path, problems)
    return _chosen(rows, fields, where)
