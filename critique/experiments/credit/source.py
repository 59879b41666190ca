"""The source run of a credit test (critique.experiments.credit.deletion): what it reads of it (the episodic memory, a
stream's note versions, or a field method's notes), the settings the credit run takes from it, and what it
refuses to credit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from critique.base import rundir
from critique.base.errors import UserError
from critique.experiments.credit import method as credit_method, stream as credit_stream
from critique.experiments.source_run import ENTRIES, SourceRun


def source_config(manifest: dict, **changes):
    """The source run's settings (those a manifest predates: their value of that time), no strategies."""
    from critique.base.config import manifest_run_config

    return replace(manifest_run_config(manifest), **{"strategies": [], **changes})


def refuse_unrebuildable(manifest: dict, source: Path) -> None:
    """UserError when the source run chose its prompts' entries otherwise than by the K nearest (a gate, an
    injection budget, another retrieval): credit and pruning rebuild prompts with the K nearest only."""
    from critique.base.config import manifest_value

    config = manifest["config"]
    for key in ("gate", "inject_budget"):
        if manifest_value(config, key) is not None:
            raise UserError(f"{source}: the run has --{key.replace('_', '-')} {manifest_value(config, key)}; credit "
                            "and pruning retrieve the K nearest entries only (rerun the source without it)")
    if manifest_value(config, "retrieval") != "nearest":
        raise UserError(f"{source}: the run has --retrieval {manifest_value(config, 'retrieval')}; credit and "
                        "pruning retrieve the K nearest entries only (--retrieval nearest)")


def read_source(source: Path, method: str | None = None) -> dict:
    """What the credit test reads of the source run: manifest, memory entries, semantic memory (``method``: a
    field method's memory document instead)."""
    source = Path(source)
    run = SourceRun(source)
    if not run.is_run():
        raise FileNotFoundError(f"{source}: not a run directory (no {rundir.MANIFEST})")
    manifest = run.manifest
    if method is not None:
        return credit_method.read(source, manifest, method)
    if credit_stream.is_stream(manifest):  # a stream: its note versions (critique.experiments.credit.stream)
        return credit_stream.read(source, manifest)
    if not run.has_episodic():
        raise UserError(f"{source}: no {rundir.MEMORY}/{ENTRIES} (the run has no episodic memory to credit)")
    return {"path": source, "manifest": manifest, "entries": run.episodic(), "semantic": run.semantic()}


def refuse(source: dict, path: Path, strategy: str, on: str, cite: bool) -> None:
    """UserError for a source (``source``: read_source's) whose prompts credit cannot rebuild."""
    manifest = source["manifest"]
    if source.get("method"):
        credit_method.refuse(manifest, path, strategy, on, cite)
        return
    refuse_unrebuildable(manifest, path)
    if source.get("stream"):
        credit_stream.refuse(manifest, path, strategy, on)
    elif on != "train" and strategy not in manifest["config"].get("strategies", []):
        raise UserError(f"{path}: the run has no {strategy} test predictions to credit (use --on train)")
