"""Semantic memory: per pool, the advice distilled from all its critiques, with its sources."""

from __future__ import annotations

import json
from pathlib import Path

from critique.base import rundir

FILE = "semantic.json"


def save(folder: Path, memory: dict[str, dict]) -> None:
    rundir.write_json_atomic(folder / FILE, memory)


def load(folder: Path) -> dict[str, dict]:
    path = folder / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
