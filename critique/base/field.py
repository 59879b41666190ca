"""One field of a run-directory record (critique.base.records): its name, JSON Schema type, meaning, whether
the analysis reads it, and whether every record of its kind carries it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    meaning: str
    analysis: bool = False
    required: bool = True
