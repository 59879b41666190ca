"""Reuse of matching runs: requests already answered in a run directory of the same model
and data are not sent again (see critique.experiments.ablations)."""

from __future__ import annotations

from pathlib import Path

from critique.base import rundir
from critique.runner import default_out
from critique.experiments.source_run import SourceRun


def candidate_dirs(places: list[Path]) -> list[Path]:
    """Run directories among ``places`` (a folder of run directories counts as its runs)."""
    found: list[Path] = []
    for place in places:
        place = Path(place)
        if rundir.is_run_dir(place):
            found.append(place)
        elif place.is_dir():
            found.extend(sorted(c for c in place.iterdir() if rundir.is_run_dir(c)))
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def matching_calls(places: list[Path], model: str, checksum: str, exclude: Path | None = None) -> dict[str, dict]:
    """request hash -> call record, from run directories of the same model and data.

    A request hash covers everything that determines a response (model, messages,
    decoding, schema), so a hash found here is the very request a new run would send.
    """
    pool: dict[str, dict] = {}
    for path in candidate_dirs(places):
        if exclude is not None and path.resolve() == Path(exclude).resolve():
            continue
        try:
            manifest = SourceRun(path).manifest
            if manifest["config"]["model"] != model or manifest["dataset"]["checksum"] != checksum:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for record in SourceRun(path).calls():
            if not record.get("error") and record.get("request_hash") and isinstance(record.get("response"), str):
                pool.setdefault(record["request_hash"], record)
    return pool


def default_places(config, parent: Path | None, extra: list[str] | None) -> list[Path]:
    """Where matching runs are looked for: --reuse folders, the output parent, runs/."""
    places = [Path(p) for p in (extra or [])]
    if parent is not None:
        places.append(Path(parent))
    places.append(default_out(config))
    return places
