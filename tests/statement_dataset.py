"""A dataset folder of true-or-false statements for the scripted fakes of the credit tests: every train
statement's answer is "yes", a test statement's its gold (default "yes")."""

from __future__ import annotations

import json
from pathlib import Path


def _lines(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def write(folder: Path, name: str, train: dict[str, str], test: dict[str, str],
          gold: dict[str, str] | None = None) -> Path:
    """``train``, ``test``: id -> statement. Returns the folder, made here."""
    gold = gold or {}
    folder.mkdir(parents=True)
    card = {"name": name, "task": "is the statement true", "answer_space": ["yes", "no"]}
    (folder / "dataset.json").write_text(json.dumps(card))
    (folder / "train.jsonl").write_text(_lines([{"id": k, "question": q, "answer": "yes"} for k, q in train.items()]))
    (folder / "test.jsonl").write_text(_lines([{"id": k, "question": q, "answer": gold.get(k, "yes")}
                                               for k, q in test.items()]))
    return folder
