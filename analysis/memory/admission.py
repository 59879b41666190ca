"""The admission table (docs/memory.md section 4, rule R1): what admission at write time keeps out, and what that
does to the answers.

Reads the runs whose config has ``admission`` other than ``all`` (`--admission instruction`): a plain run's
critique stage, or a stream's write-back. Per such run:

- `critiques`: the critiques that would have entered memory; `rejected`: those the policy kept out
  (memory/rejected.jsonl), and their share (%);
- per strategy that shows memory (a plain run's EP_CRIT, SEM_CRIT, EP+SEM_CRIT; a stream's own): its accuracy,
  and against its twin, the run among the inputs with the same settings but ``admission = all`` (admit-all): the
  difference in points on the same items, the items right only with admission (`wins`) and only without
  (`losses`), the exact McNemar p (the sign test) and the minimum detectable effect. No twin among the inputs:
  those columns are empty and the row says so.

Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.memory.arms import against, by_arm
from critique.analysis.stats.core import MDE_NOTE
from critique.analysis.study.cells import over_users, percent_correct
from critique.analysis.study.tabular import Table
from critique.base import rundir, vocab

KEY = "admission"
TITLE = "Admission at write time: the critiques kept out of memory, and the answers against admit-all (%)"
ALL = "all"
REJECTED = "rejected.jsonl"  # critique.engine.memory.admission.REJECTED
SHOWING = (vocab.EP_CRIT, vocab.SEM_CRIT, vocab.EP_SEM_CRIT)
COLUMNS = ["model", "dataset", "admission", "probe", "critiques", "rejected", "rejected_share", "strategy",
           "accuracy", "admit_all", "vs_admit_all", "wins", "losses", "p", "mde", "twin"]
NOTE = ("admission: which critiques may enter memory (instruction: only those whose reasons carry an imperative, "
        "a directive or a condition); critiques: those that would have entered; rejected: kept out "
        "(memory/rejected.jsonl); admit_all, vs_admit_all: the twin run's accuracy (same settings, admission all) "
        "and the points against it on the same items (wins, losses: right only with admission, only without); "
        "p: exact McNemar (sign test on those items); twin: that run, or none among the inputs; " + MDE_NOTE)


def _settings_without_admission(meta: dict) -> tuple:
    settings = {k: v for k, v in (meta.get("settings") or {}).items() if k != "admission"}
    return (meta["model"], meta["dataset"], meta["probe"], meta.get("probe_args"), meta["ablation"],
            repr(sorted(settings.items())))


def _stage_and_strategies(meta: dict) -> tuple[str, list[str]]:
    if meta.get("probe") == "stream":
        return "stream", [vocab.EP_CRIT, vocab.EP_SEM_CRIT]
    return vocab.TEST, list(SHOWING)


def run_rows(meta: dict, twin: dict | None, problems: list[str]) -> list[dict]:
    path = Path(meta["path"])
    rejected = rundir.read_jsonl(path / rundir.MEMORY / REJECTED, problems)
    entered = len(rundir.read_jsonl(path / rundir.MEMORY / "episodic.jsonl", problems))
    if meta.get("probe") == "stream":  # a stream's notes: the train memory's and each one written back
        notes = rundir.read_jsonl(path / rundir.MEMORY / rundir.NOTES, problems)
        entered = sum(1 for n in notes if n.get("replaces") is None)
    critiques = entered + len(rejected)
    preference = meta.get("kind") == "preference"
    stage, strategies = _stage_and_strategies(meta)
    mine = by_arm(path, stage, problems)
    theirs = by_arm(Path(twin["path"]), stage, problems) if twin else {}
    base = {"model": meta["model"], "dataset": meta["dataset"], "admission": meta["settings"].get("admission"),
            "probe": meta.get("probe"), "critiques": critiques, "rejected": len(rejected),
            "rejected_share": 100.0 * len(rejected) / critiques if critiques else None,
            "twin": twin["path"] if twin else "none among the inputs"}
    rows = []
    for strategy in strategies:
        if strategy not in mine:
            continue
        row = {**base, "strategy": strategy, "accuracy": over_users(list(mine[strategy].values()), percent_correct,
                                                                      preference)}
        if strategy in theirs:
            row["admit_all"] = over_users(list(theirs[strategy].values()), percent_correct, preference)
            row.update(against(mine[strategy], theirs[strategy], "vs_admit_all"))
        rows.append(row)
    return rows or [base]


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the runs with an admission policy among the runs read (`critique tables`)."""
    admitting = [m for m in metas if (m.get("settings") or {}).get("admission", ALL) != ALL]
    if not admitting:
        return Table(KEY, TITLE, skipped="no run with --admission other than all among the inputs")
    twins = {_settings_without_admission(m): m for m in metas if (m.get("settings") or {}).get("admission") == ALL}
    rows = [row for m in admitting for row in run_rows(m, twins.get(_settings_without_admission(m)), problems)]
    return Table(KEY, TITLE, COLUMNS, rows, note=NOTE)
