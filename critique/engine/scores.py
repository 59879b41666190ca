"""Per-strategy rows of one run directory that the ablation summaries are made of, and the errors a command
reports when it ends. Accuracy and tokens per question are defined once, in the analysis (analysis.study.cells):
these rows are Table 1's cells of the run (analysis.study.run_table), as `critique tables` prints them."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.study.run_table import from_records
from critique.engine.memory.semantic import CONTEXT_MISSED


def strategy_rows(predictions: list[dict], strategies: list[str]) -> list[dict]:
    """Table 1's cells of ``strategies`` (in that order; those with test predictions) from one run's prediction
    records: strategy, n, accuracy, timeout_rate, overflow_rate, parse_fail_rate, error_rate, errors, timeouts,
    overflows, tokens_per_question."""
    by_strategy = {row["strategy"]: row for row in from_records(predictions)}
    return [by_strategy[name] for name in strategies if name in by_strategy]


def errored(predictions: list[dict]) -> dict[str, int]:
    """stage -> how many of its predictions (the latest of each item) ended in an error."""
    out: dict[str, int] = {}
    for p in predictions:
        if p.get("error"):
            out[p["stage"]] = out.get(p["stage"], 0) + 1
    return out


def report_errors(run_dirs: list[Path], found: dict[str, int] | None = None) -> int:
    """Say on stderr how many predictions of these run directories ended in an error (they count
    wrong: not answers of the model); the exit status a command then has: 1 if any, else 0.
    ``found``: the errored predictions per stage when the caller has counted them."""
    import sys

    if found is None:
        found = {}
        for run_dir in run_dirs:
            for stage, count in errored(logs.predictions(run_dir)).items():
                found[stage] = found.get(stage, 0) + count
    if not found:
        return 0
    shown = ", ".join(f"{count} in {stage}" for stage, count in sorted(found.items()))
    where = run_dirs[0] / "predictions.jsonl" if len(run_dirs) == 1 else "the run directories' predictions.jsonl"
    cure = "Run the same command again to retry them"
    if any(CONTEXT_MISSED in (p.get("error") or "") for run_dir in run_dirs for p in logs.predictions(run_dir)):
        cure = ("Some need a prompt that did not fit the model's context, which a rerun alone cannot fit: run the "
                "same command with --context-tokens N (the model's context; a run directory takes one that only "
                "narrows what it may send)")
    print(f"critique: error: {sum(found.values())} predictions ended in an error ({shown}), not in an answer of the "
          f"model: they count wrong; see the error field in {where}. {cure}", file=sys.stderr)
    return 1
