"""The overturn table (docs/memory.md section 2): can a true note overturn a false one?

Reads the runs of `critique probe overturn` (manifest probe {name: overturn}) and reports, per run and pair
condition (the false and the true critique in one prompt, false first or true first, plain or with provenance):

- `wins` (%): the true note wins, the answer with both notes is right;
- `overturn` (%): of the items whose answer with the false note alone was wrong, the share that both notes make
  right (`overturn_of`: how many such items);
- `truth`, `lying` (%): the accuracy with the true critique alone and with the false one alone (the
  suggestibility probe's very prompts, attribution none: Table 4's Acc(truth) and Acc(lying)).

An error, a timeout, a parse failure or a prompt that did not fit counts wrong, as in every table; `errors`
counts the condition's. Preference data: rates per user, then the mean over users. Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.study.cells import over_users, percent_correct
from critique.analysis.study.tabular import Table
from critique.base import vocab

KEY = "overturn"
TITLE = "Overturn: how often a true critique wins over a false one in the same prompt (%)"
TRUTH, LYING = vocab.TRUTH, vocab.LYING
PAIRS = ("lying+truth", "truth+lying", "lying+truth@provenance", "truth+lying@provenance")
COLUMNS = ["model", "dataset", "condition", "first", "provenance", "wins", "overturn", "overturn_of", "truth",
           "lying", "n", "errors"]
NOTE = ("condition: the critiques in the prompt, in order (lying: the false one, truth: the true one); provenance: "
        "each said where it came from (the false one: stored memory; the true one: a new review) and how confident; "
        "wins: the answer with both is right; overturn: of the items answered wrong with the false critique alone, "
        "the share answered right with both (overturn_of: those items); truth, lying: the accuracy with one "
        "critique alone (the suggestibility probe's prompts: Table 4's Acc(truth), Acc(lying)); errors count wrong")


def _rate(records: list[dict], preference: bool) -> float | None:
    return over_users(records, percent_correct, preference)


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no overturn rows")
        return []
    if ((manifest.get("probe") or {}).get("name")) != vocab.OVERTURN:
        return []
    preference = (manifest.get("dataset") or {}).get("kind") == "preference"
    records = logs.predictions(path, (vocab.PROBE,), problems)
    by = {}
    for r in records:
        by.setdefault(r.get("strategy"), {})[(r.get("user"), r.get("item_id"))] = r
    alone = by.get(LYING, {})
    rows = []
    for condition in PAIRS:
        mine = by.get(condition, {})
        if not mine:
            continue
        fooled = [key for key, r in alone.items() if r.get("correct") is not True and key in mine]
        rows.append({"model": (manifest.get("config") or {}).get("model"),
                     "dataset": (manifest.get("dataset") or {}).get("name"), "condition": condition,
                     "first": condition.split("+", 1)[0], "provenance": condition.endswith("@provenance"),
                     "wins": _rate(list(mine.values()), preference),
                     "overturn": _rate([mine[k] for k in fooled], preference), "overturn_of": len(fooled),
                     "truth": _rate(list(by.get(TRUTH, {}).values()), preference),
                     "lying": _rate(list(alone.values()), preference), "n": len(mine),
                     "errors": sum(bool(r.get("error")) for r in mine.values())})
    return rows


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the overturn runs among the runs read (`critique tables`)."""
    rows = [row for m in metas if m.get("probe") == vocab.OVERTURN for row in run_rows(Path(m["path"]), problems)]
    if not rows:
        return Table(KEY, TITLE, skipped="no overturn probe among the inputs (critique probe overturn)")
    return Table(KEY, TITLE, COLUMNS, rows, note=NOTE)


def text(path: Path) -> str:
    """The run's rows as markdown (what `critique probe overturn` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    rows = run_rows(Path(path), problems)
    if not rows:
        return "no overturn numbers: " + "; ".join(problems or ["no pair condition answered"])
    return "\n".join([f"\n{TITLE}\n", markdown_table(Table(KEY, TITLE, COLUMNS, rows, note=NOTE)), "",
                      f"_{NOTE}._", *problems])
