"""The revocable-priors table (docs/memory.md section 4, rule R5): is a note marked as a prior dropped where the
question contradicts it?

Reads the runs of `critique probe priors` (manifest probe {name: priors}) and reports, per run and arm (unmarked:
EP_CRIT's very prompts; prior: the same notes, each marked as a prior to drop on contradiction):

- `accuracy` (%), `n`, `errors` (an error, a timeout, a parse failure or a prompt that did not fit counts wrong,
  as in every table; preference data: per user, then the mean over users);
- `note_right` (%): the items whose nearest note asserts their gold label (the same in both arms);
- `followed` (%): answers that are the nearest note's option, over the items whose note names one; `followed_wrong`
  (%): the same over the items whose nearest note is wrong, the contradicted ones;
- `acc_note_right`, `acc_note_wrong` (%): the accuracy on the items whose nearest note is right, and wrong;
- the prior arm against the unmarked one on the same items: the difference in points, the items right only with
  the marks (`wins`) and only without (`losses`), the exact McNemar p (the sign test) and the minimum detectable
  effect.

R5 predicts `followed_wrong` falls and `acc_note_wrong` rises under the marks, with little lost on
`acc_note_right`. Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.memory.arms import ProbeTable, against, probe_run, share
from critique.analysis.stats.core import MDE_NOTE
from critique.analysis.study.cells import over_users, percent_correct
from critique.base import vocab

KEY = "priors"
TITLE = "Revocable priors: EP_CRIT's notes marked as priors to drop on contradiction, against unmarked (%)"
UNMARKED, PRIOR = "unmarked", "prior"
COLUMNS = ["model", "dataset", "arm", "accuracy", "n", "errors", "note_right", "followed", "followed_wrong",
           "acc_note_right", "acc_note_wrong", "vs_unmarked", "wins", "losses", "p", "mde"]
NOTE = ("arm: unmarked (EP_CRIT's prompts) or prior (each note shown marked as a prior to drop where the question's "
        "own facts contradict it); note_right: items whose nearest note asserts their gold label; followed: answers "
        "that are the nearest note's option; followed_wrong: the same where that note is wrong; acc_note_right, "
        "acc_note_wrong: accuracy where the nearest note is right, wrong; vs_unmarked: points against the unmarked "
        "arm on the same items (wins, losses: items right only with the marks, only without); p: exact McNemar "
        "(sign test on those items); errors count wrong; " + MDE_NOTE)


def _rate(records: list[dict], preference: bool) -> float | None:
    return over_users(records, percent_correct, preference)


def _arm_row(records: list[dict], preference: bool) -> dict:
    right = [r for r in records if r.get("note_right") is True]
    wrong = [r for r in records if r.get("note_right") is False]
    return {"accuracy": _rate(records, preference), "n": len(records),
            "errors": sum(bool(r.get("error")) for r in records), "note_right": share(records, "note_right"),
            "followed": share(records, "followed_note"), "followed_wrong": share(wrong, "followed_note"),
            "acc_note_right": _rate(right, preference), "acc_note_wrong": _rate(wrong, preference)}


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    run = probe_run(path, vocab.PRIORS, vocab.PROBE, problems)
    if run is None:
        return []
    by = run.by
    rows = []
    for arm in (UNMARKED, PRIOR):
        if not by.get(arm):
            continue
        row = {**run.row(arm), **_arm_row(list(by[arm].values()), run.preference)}
        if arm == PRIOR:
            row.update(against(by[PRIOR], by.get(UNMARKED, {}), "vs_unmarked"))
        rows.append(row)
    return rows


TABLE = ProbeTable(vocab.PRIORS, KEY, TITLE, COLUMNS, NOTE, run_rows)
table, text = TABLE.table, TABLE.text
