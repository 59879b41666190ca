"""Helpers shared by the builders: finding raw files, reading them line by line with
errors that name the file and line, checksums, and balanced answer positions."""

from __future__ import annotations

import csv
import io
import hashlib
import json
import random
from pathlib import Path
from typing import Iterator

from critique.datasets.splits import DatasetError, read_text
from critique.datasets.splits import iter_json_lines as read_jsonl  # noqa: F401 (used by builders)


def raw_folder(raw: str | Path | None, name: str) -> Path:
    """The raw folder a builder reads; a clear error when it is not given or absent."""
    if raw is None:
        raise DatasetError(f"dataset {name!r} is built from upstream files: pass --raw DIR "
                           f"(see `critique datasets download {name}`)")
    folder = Path(raw)
    if not folder.is_dir():
        raise DatasetError(f"{folder}: raw folder for {name!r} does not exist (pass --raw DIR, or fetch "
                           f"it with `critique datasets download {name}`)")
    return folder


def require(folder: Path, *names: str) -> list[Path]:
    """The named files under ``folder``; DatasetError naming the first one missing."""
    paths = [folder / n for n in names]
    for path in paths:
        if not path.is_file():
            raise DatasetError(f"{path}: required raw file is missing")
    return paths


def first_present(folder: Path, *names: str) -> Path:
    """The first of several alternative raw files that exists."""
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise DatasetError(f"{folder}: none of the raw files {', '.join(names)} is present")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def raw_checksums(folder: Path, paths: list[Path]) -> dict[str, str]:
    """sha256 of each raw input, keyed by its path relative to the raw folder."""
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(paths)}


def fail(path: Path, line: int, problem: str) -> DatasetError:
    return DatasetError(f"{path}:{line}: {problem}")


def read_tsv(path: Path, columns: int, header: bool = True, sep: str = "\t",
             encoding: str = "utf-8") -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a delimited file with at least ``columns`` fields a row."""
    with io.StringIO(read_text(path, encoding), newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if header and number == 1:
                continue
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split(sep)
            if len(fields) < columns:
                raise fail(path, number, f"expected {columns} fields separated by {sep!r}, found {len(fields)}")
            yield number, fields


def read_csv(path: Path, required: list[str], encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """(line number, row) of a CSV file with a header naming at least ``required``."""
    with io.StringIO(read_text(path, encoding), newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise fail(path, 1, f"header lacks column {', '.join(missing)}")
        for row in reader:
            if any(row.get(c) in (None, "") for c in required):
                raise fail(path, reader.line_num, f"empty or missing field in {required}")
            yield reader.line_num, row


def read_json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise fail(path, exc.lineno, f"not valid JSON ({exc.msg})") from None


def number(path: Path, line: int, text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise fail(path, line, f"{what} {text!r} is not a number") from None


def balanced_positions(rng: random.Random, n: int, slots: int, offset: int = 0) -> list[int]:
    """``n`` answer positions in 0..slots-1, each used n/slots times (+-1), shuffled.
    ``offset`` rotates which positions get the extra one, so several blocks balance together."""
    positions = [(i + offset) % slots for i in range(n)]
    rng.shuffle(positions)
    return positions


def check_balanced(items, answer_space: list[str], where: str) -> None:
    """Every answer occurs n/len(space) times, to within one."""
    counts = [sum(i.answer == a for i in items) for a in answer_space]
    if items and max(counts) - min(counts) > 1:
        raise DatasetError(f"{where}: answer positions are not balanced: {dict(zip(answer_space, counts))}")
