"""The checks of a study file's fields (critique.experiments.study.file): each failure is one UserError naming
the file and the field."""

from __future__ import annotations

from pathlib import Path

from critique.base.errors import UserError


def error(message: str) -> UserError:
    return UserError(message)


def unknown(path: Path, where: str, key: str, known) -> Exception:
    return error(f"{path}: unknown field {where}{key!r} (known: {', '.join(sorted(known))})")


def check_table(path: Path, where: str, entry, fields) -> None:
    """``entry`` is a TOML table whose keys are all in ``fields``."""
    if not isinstance(entry, dict):
        raise error(f"{path}: {where} must be a table")
    for key in entry:
        if key not in fields:
            raise unknown(path, f"{where}: ", key, fields)


def typed(path: Path, where: str, value, kind):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if (kind is not bool and isinstance(value, bool)) or not isinstance(value, kind):
        what = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", list: "a list"}
        raise error(f"{path}: {where} must be {what[kind]}, not {value!r}")
    return value


def string_list(path: Path, where: str, value) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise error(f"{path}: {where} must be a list of names, not {value!r}")
    return [v.strip() for v in value]


def filters(path: Path, where: str, spec: dict, datasets: list[str], models: list[str]) -> dict:
    """The optional datasets/models a probe or ablation is limited to (each must be in the study)."""
    out = {}
    for key, known in (("datasets", datasets), ("models", models)):
        if key in spec:
            chosen = string_list(path, f"{where}.{key}", spec[key])
            strange = [c for c in chosen if c not in known]
            if strange:
                raise error(f"{path}: {where}.{key}: {', '.join(strange)} not among the study's {key}")
            out[key] = chosen
    return out
