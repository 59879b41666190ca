"""Read chosen top-level scalar fields of a JSON-lines log, fast.

A call record carries the rendered prompt and the raw response, so `calls.jsonl` is
mostly text the tables never look at; `json.loads` on every line costs seconds at the
study's scale. This reader finds each wanted key in the raw bytes of its line instead.

Why that is safe for the run-directory format: inside a JSON string every `"` is escaped
as `\\"` and every newline as `\\n`, so a raw newline ends a record and the bytes
`"name":` (closing quote unescaped) occur only where an object key is written. The format
writes each field once, at the top level of a flat record (its nested values, `messages`
and `retrieved`, use other keys), so the one occurrence in a line is the field. Keys are
looked up from the end of the line they sat nearer to in the first record, so the long
prompt and response between them are never scanned twice. Whenever a line is not as
expected -- a wanted key missing, a value that is not a scalar, a blank line -- the whole
file takes the plain path, `json.loads` line by line. A last line without its newline (cut
by a killed writer) always takes the plain path: it is kept if it parses, else skipped and
reported, as `critique.base.rundir.read_jsonl` does.

Records come back as rows: one tuple of the wanted fields per record.
"""

from __future__ import annotations

import json
import re
from operator import itemgetter
from pathlib import Path

import orjson

_VALUE = re.compile(rb'[ \t]*("[^"\\\n]*(?:\\.[^"\\\n]*)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|null|true|false)')
_CONSTANTS = {b"null": None, b"true": True, b"false": False}
_BACKSLASH = 92

Row = tuple  # the wanted fields of one record, in the order asked for


def _decode(token: bytes):
    if token[:1] == b'"':
        text = token.decode("utf-8", errors="replace")
        return json.loads(text) if "\\" in text else text[1:-1]
    if token in _CONSTANTS:
        return _CONSTANTS[token]
    return float(token) if any(c in token for c in b".eE") else int(token)


def _decoded(tokens: list[bytes]) -> list:
    """The values of raw JSON scalars (each distinct one decoded once)."""
    values = {t: _decode(t) for t in set(tokens)}
    return [values[t] for t in tokens]


def _line_ends(data: bytes, end: int) -> list[int]:
    ends, find = [], data.find
    at = find(b"\n", 0, end)
    while at >= 0:
        ends.append(at)
        at = find(b"\n", at + 1, end)
    return ends


def _fast(data: bytes, end: int, fields: tuple[str, ...]) -> list[Row] | None:
    """Rows of the whole lines in data[:end], or None when a line is not as expected."""
    ends = _line_ends(data, end)
    if not ends:
        return []
    needles = [b'"' + f.encode("utf-8") + b'":' for f in fields]
    first = [data.find(n, 0, ends[0]) for n in needles]
    if min(first) < 0:
        return None
    tokens: list[list[bytes]] = [[] for _ in fields]
    plan = [(n, len(n), at < ends[0] - at, out.append) for n, at, out in zip(needles, first, tokens)]
    find, rfind, match = data.find, data.rfind, _VALUE.match
    start = 0
    for stop in ends:
        for needle, size, forward, append in plan:
            at = find(needle, start, stop) if forward else rfind(needle, start, stop)
            if at <= start or data[at - 1] == _BACKSLASH:
                return None
            value = match(data, at + size, stop)
            if value is None:
                return None
            append(value[1])
        start = stop + 1
    try:
        return list(zip(*(_decoded(t) for t in tokens)))
    except ValueError:  # an escape that is not JSON: let json.loads judge the line
        return None


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
    """Rows of the whole lines in data[:end], parsed at once as one JSON array by orjson (short
    records: one call costs half of one per line, and orjson a third less than json.loads);
    None when a line is not one JSON object."""
    body = data[:end].rstrip(b"\n")
    if not body:
        return []
    try:
        records = orjson.loads(b"[" + body.replace(b"\n", b",") + b"]")
    except ValueError:  # orjson.JSONDecodeError included; NaN too, which the plain path reads
        return None
    if len(records) != body.count(b"\n") + 1 or not all(type(r) is dict for r in records):
        return None  # a blank line, a line holding two values, or one that is not an object
    take = itemgetter(*fields) if len(fields) > 1 else None
    try:
        if take is not None:
            return list(map(take, records))  # every record has every field: the common case
    except KeyError:
        pass
    return [tuple(map(record.get, fields)) for record in records]


def _chosen(rows: list[Row], fields: tuple[str, ...], where: Where | None) -> list[Row]:
    if where is None:
        return rows
    index = fields.index(where[0])
    return [row for row in rows if row[index] in where[1]]


def scan(path: str | Path, fields: tuple[str, ...], problems: list[str] | None = None,
         exact: bool = False, where: Where | None = None) -> list[Row]:
    """One row per whole record of `path`: its `fields` in order (None where a record lacks one).

    where=(field, values): only the records whose `field` is one of `values` (`field` must be
    among `fields`); the other lines are passed over without reading them (for the long
    records of calls.jsonl). Without `where`, short records are parsed with one json.loads.
    exact=True parses every line with `json.loads` (the reference the fast path is tested
    against). A missing file reads as no records.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    rows = None
    if not exact and where is None:
        rows = _whole(data, end, fields)
    elif not exact:
        lines = _selected(data, end, where)
        rows = _fast(lines, len(lines), fields)
    if rows is None:
        return _chosen(_plain(data, 1, fields, path, problems), fields, where)
    tail = data[end:]
    if tail.strip():
        rows += _chosen(_plain(tail, data.count(b"\n", 0, end) + 1, fields, path, problems), fields, where)
    return rows
