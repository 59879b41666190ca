"""The conditioning table (docs/memory.md section 4): past outcomes against procedures, at several lengths.

Reads the runs of `critique probe conditioning` (manifest probe {name: conditioning, lengths}) and reports, per
run and arm (none; outcomes@L: the questions the agent answered right, without their answers; procedures@L: the
lessons the critiques of the same answers drew):

- `accuracy` (%), `n`, `errors` (an error, a timeout, a parse failure or a prompt that did not fit counts wrong,
  as in every table; preference data: per user, then the mean over users);
- `entries`: the entries the preamble held, on average (fewer than L where the pool had fewer trophies);
- `prompt tokens`: per question, as the provider counted them;
- against `none` on the same items: the difference in points, the items right only in the arm (`wins`) and only
  without a preamble (`losses`), the exact McNemar test's p (the sign test on those items), Holm over the run's
  arms, and the minimum detectable effect.

P1 predicts: outcomes do not help and hurt more as they get longer; procedures can help. The rows show whether
this model does; a p above 0.05 on a row is no evidence against a difference smaller than its mde. Reads logs
only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.stats.core import MDE_NOTE, detectable_effect, holm, sign_test
from critique.analysis.study.cells import over_users, percent_correct
from critique.analysis.study.tabular import Table
from critique.base import vocab

KEY = "conditioning"
TITLE = "Conditioning: a preamble of past outcomes or of procedures, against none (%)"
NONE = "none"
COLUMNS = ["model", "dataset", "arm", "preamble", "length", "entries", "accuracy", "n", "errors", "prompt_tokens",
           "vs_none", "wins", "losses", "p", "p_holm", "mde"]
NOTE = ("arm: none (the zero-shot prompt), outcomes@L (a preamble of L questions the agent answered right in the "
        "train stage, without their answers) or procedures@L (the lessons the critiques of the same L answers "
        "drew); entries: those the preamble held, on average (fewer where the pool had fewer right answers); "
        "vs_none: points against none on the same items; wins, losses: items right only in the arm, only in none; "
        "p: exact McNemar (sign test on those items); p_holm: Holm over the run's arms; errors count wrong; "
        + MDE_NOTE)


def _rate(records: list[dict], preference: bool) -> float | None:
    return over_users(records, percent_correct, preference)


def _mean(values: list) -> float | None:
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) / len(values) if values else None


def _against_none(mine: dict, none: dict) -> dict:
    both = [key for key in mine if key in none]
    wins = sum(mine[k].get("correct") is True and none[k].get("correct") is not True for k in both)
    losses = sum(mine[k].get("correct") is not True and none[k].get("correct") is True for k in both)
    diff = 100.0 * (wins - losses) / len(both) if both else None
    return {"vs_none": diff, "wins": wins, "losses": losses, "p": sign_test(wins, losses),
            "mde": detectable_effect(len(both), wins + losses)}


def _arm_order(arm: str) -> tuple:
    if arm == NONE:
        return (0, "", 0)
    kind, length = arm.split("@")
    return (1, kind, int(length))


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no conditioning rows")
        return []
    if ((manifest.get("probe") or {}).get("name")) != vocab.CONDITIONING:
        return []
    preference = (manifest.get("dataset") or {}).get("kind") == "preference"
    by: dict[str, dict] = {}
    for r in logs.predictions(path, (vocab.PROBE,), problems):
        by.setdefault(r.get("strategy"), {})[(r.get("user"), r.get("item_id"))] = r
    none = by.get(NONE, {})
    rows = []
    for arm in sorted(by, key=_arm_order):
        mine = by[arm]
        row = {"model": (manifest.get("config") or {}).get("model"),
               "dataset": (manifest.get("dataset") or {}).get("name"), "arm": arm,
               "preamble": arm.split("@")[0], "length": _arm_order(arm)[2],
               "entries": _mean([len(r.get("entries") or []) for r in mine.values()]),
               "accuracy": _rate(list(mine.values()), preference), "n": len(mine),
               "errors": sum(bool(r.get("error")) for r in mine.values()),
               "prompt_tokens": _mean([r.get("prompt_tokens") for r in mine.values()])}
        if arm != NONE:
            row.update(_against_none(mine, none))
        rows.append(row)
    adjusted = holm([row.get("p") for row in rows])
    for row, p_holm in zip(rows, adjusted):
        row["p_holm"] = p_holm
    return rows


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the conditioning runs among the runs read (`critique tables`)."""
    rows = [row for m in metas if m.get("probe") == vocab.CONDITIONING for row in run_rows(Path(m["path"]), problems)]
    if not rows:
        return Table(KEY, TITLE, skipped="no conditioning probe among the inputs (critique probe conditioning)")
    return Table(KEY, TITLE, COLUMNS, rows, note=NOTE)


def text(path: Path) -> str:
    """The run's rows as markdown (what `critique probe conditioning` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    rows = run_rows(Path(path), problems)
    if not rows:
        return "no conditioning numbers: " + "; ".join(problems or ["no arm answered"])
    return "\n".join([f"\n{TITLE}\n", markdown_table(Table(KEY, TITLE, COLUMNS, rows, note=NOTE)), "",
                      f"_{NOTE}._", *problems])
