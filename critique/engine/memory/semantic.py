"""Semantic memory: per pool, the advice distilled from all its critiques, with its sources."""

from __future__ import annotations

import json
from pathlib import Path

FILE = "semantic.json"


def save(folder: Path, memory: dict[str, dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{FILE}.tmp"
    tmp.write_text(json.dumps(memory, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(folder / FILE)


def load(folder: Path) -> dict[str, dict]:
    path = folder / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
