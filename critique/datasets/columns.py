"""Which column of an imported set holds what, and how its splits are made and ordered: options of
`critique datasets import`, a small TOML or JSON mapping file, or a preset's [columns] (critique.datasets.hub)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from critique.datasets.order import ORDERS
from critique.datasets.splits import DatasetError


@dataclass(frozen=True)
class Columns:
    """Which column is what, and how the splits are made. None: found by its usual names."""

    question: str | None = None
    label: str | None = None
    id: str | None = None
    user: str | None = None
    task: str | None = None
    train_split: str | None = None
    test_split: str | None = None
    test_fraction: float = 0.5
    seed: int = 0
    order: str = "source"  # the rows' order in each split (critique.datasets.order: source or interleaved)

    @classmethod
    def from_file(cls, path: str | Path) -> "Columns":
        """A mapping file: TOML (`question = "text"`) or JSON (`{"question": "text"}`), keys as the fields."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            record = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise DatasetError(f"{path}: not a valid mapping file ({exc})") from None
        return cls.from_record(record, str(path))

    @classmethod
    def from_record(cls, record: dict, where: str) -> "Columns":
        """The columns a mapping names (`where`: the file, for the error), every key one of the fields."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(record) - known)
        if unknown:
            raise DatasetError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        if record.get("order", "source") not in ORDERS:
            raise DatasetError(f"{where}: order must be one of {', '.join(ORDERS)}, not {record['order']!r}")
        return cls(**record)

    def given(self, **values) -> "Columns":
        """These columns with the values that are not None put in."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})
