"""The dose-response table (docs/memory.md section 4): accuracy as injected memory grows, own against irrelevant.

Reads the runs of `critique probe dose` (manifest probe {name: dose, values, irrelevant, irrelevant_dataset}) and
reports, per run and arm (none; own@K: EP_CRIT's prompt with the K nearest entries of the run's memory;
irrelevant@K: the K nearest of another dataset's):

- `k`, `shown` (the entries shown, on average), `prompt_tokens` (per question, as the provider counted them);
- `accuracy` (%), `n`, `errors` (an error, a timeout, a parse failure or a prompt that did not fit counts wrong;
  preference data: per user, then the mean over users);
- `memory_only` (%): rule R7's lexical check, the answers that are an option a shown note asserts and the
  question does not hold as a word, over the answers where a note named an option;
- against `none` on the same items: the difference in points, the items right only in the arm (`wins`) and only
  without memory (`losses`), the exact McNemar p (the sign test), Holm over the run's arms, and the minimum
  detectable effect.

Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.stats.core import MDE_NOTE, detectable_effect, holm, sign_test
from critique.analysis.study.cells import over_users, percent_correct
from critique.analysis.study.tabular import Table
from critique.base import vocab

KEY = "dose"
TITLE = "Dose-response: accuracy as injected memory grows, the run's own against another dataset's (%)"
NONE = "none"
COLUMNS = ["model", "dataset", "arm", "memory", "k", "shown", "prompt_tokens", "accuracy", "n", "errors",
           "memory_only", "vs_none", "wins", "losses", "p", "p_holm", "mde"]
NOTE = ("arm: none (the zero-shot prompt), own@K (EP_CRIT's prompt with the K nearest entries of the run's memory) "
        "or irrelevant@K (the K nearest of another dataset's run); shown: entries shown, on average; memory_only: "
        "answers that are an option a shown note asserts and the question does not hold as a word (rule R7), over "
        "the answers where a note named one; vs_none: points against none on the same items (wins, losses: right "
        "only in the arm, only in none); p: exact McNemar (sign test on those items); p_holm: Holm over the run's "
        "arms; errors count wrong; " + MDE_NOTE)


def _mean(values: list) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(values) / len(values) if values else None


def _share(records: list[dict], field: str) -> float | None:
    known = [r for r in records if isinstance(r.get(field), bool)]
    return 100.0 * sum(r[field] for r in known) / len(known) if known else None


def _against_none(mine: dict, none: dict) -> dict:
    both = [key for key in mine if key in none]
    wins = sum(mine[k].get("correct") is True and none[k].get("correct") is not True for k in both)
    losses = sum(mine[k].get("correct") is not True and none[k].get("correct") is True for k in both)
    return {"vs_none": 100.0 * (wins - losses) / len(both) if both else None, "wins": wins, "losses": losses,
            "p": sign_test(wins, losses), "mde": detectable_effect(len(both), wins + losses)}


def _order(arm: str) -> tuple:
    if arm == NONE:
        return (0, "", 0)
    kind, k = arm.split("@")
    return (1, kind, int(k))


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no dose rows")
        return []
    if ((manifest.get("probe") or {}).get("name")) != vocab.DOSE:
        return []
    preference = (manifest.get("dataset") or {}).get("kind") == "preference"
    by: dict[str, dict] = {}
    for r in logs.predictions(path, (vocab.PROBE,), problems):
        by.setdefault(r.get("strategy"), {})[(r.get("user"), r.get("item_id"))] = r
    none = by.get(NONE, {})
    rows = []
    for arm in sorted(by, key=_order):
        records = list(by[arm].values())
        row = {"model": (manifest.get("config") or {}).get("model"),
               "dataset": (manifest.get("dataset") or {}).get("name"), "arm": arm,
               "memory": arm.split("@")[0], "k": _order(arm)[2], "shown": _mean([r.get("shown") for r in records]),
               "prompt_tokens": _mean([r.get("prompt_tokens") for r in records]),
               "accuracy": over_users(records, percent_correct, preference), "n": len(records),
               "errors": sum(bool(r.get("error")) for r in records), "memory_only": _share(records, "memory_only")}
        if arm != NONE:
            row.update(_against_none(by[arm], none))
        rows.append(row)
    for row, p_holm in zip(rows, holm([row.get("p") for row in rows])):
        row["p_holm"] = p_holm
    return rows


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the dose runs among the runs read (`critique tables`)."""
    rows = [row for m in metas if m.get("probe") == vocab.DOSE for row in run_rows(Path(m["path"]), problems)]
    if not rows:
        return Table(KEY, TITLE, skipped="no dose probe among the inputs (critique probe dose)")
    return Table(KEY, TITLE, COLUMNS, rows, note=NOTE)


def text(path: Path) -> str:
    """The run's rows as markdown (what `critique probe dose` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    rows = run_rows(Path(path), problems)
    if not rows:
        return "no dose numbers: " + "; ".join(problems or ["no arm answered"])
    return "\n".join([f"\n{TITLE}\n", markdown_table(Table(KEY, TITLE, COLUMNS, rows, note=NOTE)), "",
                      f"_{NOTE}._", *problems])
