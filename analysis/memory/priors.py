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

from critique.analysis.reading import logs
from critique.analysis.stats.core import MDE_NOTE, detectable_effect, sign_test
from critique.analysis.study.cells import over_users, percent_correct
from critique.analysis.study.tabular import Table
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


def _share(records: list[dict], field: str) -> float | None:
    """The share (%) of records whose ``field`` is true, over those where it is true or false."""
    known = [r for r in records if isinstance(r.get(field), bool)]
    return 100.0 * sum(r[field] for r in known) / len(known) if known else None


def _against(mine: dict, other: dict) -> dict:
    both = [key for key in mine if key in other]
    wins = sum(mine[k].get("correct") is True and other[k].get("correct") is not True for k in both)
    losses = sum(mine[k].get("correct") is not True and other[k].get("correct") is True for k in both)
    return {"vs_unmarked": 100.0 * (wins - losses) / len(both) if both else None, "wins": wins, "losses": losses,
            "p": sign_test(wins, losses), "mde": detectable_effect(len(both), wins + losses)}


def _arm_row(records: list[dict], preference: bool) -> dict:
    right = [r for r in records if r.get("note_right") is True]
    wrong = [r for r in records if r.get("note_right") is False]
    return {"accuracy": _rate(records, preference), "n": len(records),
            "errors": sum(bool(r.get("error")) for r in records), "note_right": _share(records, "note_right"),
            "followed": _share(records, "followed_note"), "followed_wrong": _share(wrong, "followed_note"),
            "acc_note_right": _rate(right, preference), "acc_note_wrong": _rate(wrong, preference)}


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no priors rows")
        return []
    if ((manifest.get("probe") or {}).get("name")) != vocab.PRIORS:
        return []
    preference = (manifest.get("dataset") or {}).get("kind") == "preference"
    by: dict[str, dict] = {}
    for r in logs.predictions(path, (vocab.PROBE,), problems):
        by.setdefault(r.get("strategy"), {})[(r.get("user"), r.get("item_id"))] = r
    rows = []
    for arm in (UNMARKED, PRIOR):
        if not by.get(arm):
            continue
        row = {"model": (manifest.get("config") or {}).get("model"),
               "dataset": (manifest.get("dataset") or {}).get("name"), "arm": arm,
               **_arm_row(list(by[arm].values()), preference)}
        if arm == PRIOR:
            row.update(_against(by[PRIOR], by.get(UNMARKED, {})))
        rows.append(row)
    return rows


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the priors runs among the runs read (`critique tables`)."""
    rows = [row for m in metas if m.get("probe") == vocab.PRIORS for row in run_rows(Path(m["path"]), problems)]
    if not rows:
        return Table(KEY, TITLE, skipped="no priors probe among the inputs (critique probe priors)")
    return Table(KEY, TITLE, COLUMNS, rows, note=NOTE)


def text(path: Path) -> str:
    """The run's rows as markdown (what `critique probe priors` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    rows = run_rows(Path(path), problems)
    if not rows:
        return "no priors numbers: " + "; ".join(problems or ["no arm answered"])
    return "\n".join([f"\n{TITLE}\n", markdown_table(Table(KEY, TITLE, COLUMNS, rows, note=NOTE)), "",
                      f"_{NOTE}._", *problems])
