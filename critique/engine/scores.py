"""Per-strategy rows of one run directory that the ablation summaries are made of, and the errors a command
reports when it ends. The table `critique run` prints is Table 1's cells of its run (analysis.run_table)."""

from __future__ import annotations

from pathlib import Path

from critique.base import rundir


def strategy_rows(predictions: list[dict], strategies: list[str]) -> list[dict]:
    rows = []
    for name in strategies:
        mine = [p for p in predictions if p["stage"] == "test" and p["strategy"] == name]
        if not mine:
            continue
        n = len(mine)
        rows.append({"strategy": name, "n": n, "accuracy": 100.0 * sum(p["correct"] for p in mine) / n,
                     "timeouts": sum(p["timeout"] for p in mine),
                     "overflows": sum(bool(p.get("context_overflow")) for p in mine),
                     "parse_failures": sum(bool(p["parse_failed"]) and not p.get("error") for p in mine),
                     "errors": sum(bool(p.get("error")) for p in mine),
                     "tokens_per_question": sum(p.get("completion_tokens", 0) for p in mine) / n})
    return rows


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
            for stage, count in errored(rundir.latest(rundir.read_run(run_dir)["predictions"])).items():
                found[stage] = found.get(stage, 0) + count
    if not found:
        return 0
    shown = ", ".join(f"{count} in {stage}" for stage, count in sorted(found.items()))
    where = run_dirs[0] / "predictions.jsonl" if len(run_dirs) == 1 else "the run directories' predictions.jsonl"
    print(f"critique: error: {sum(found.values())} predictions ended in an error ({shown}), not in an answer of the "
          f"model: they count wrong; see the error field in {where}. Run the same command again to retry them",
          file=sys.stderr)
    return 1
