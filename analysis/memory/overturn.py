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

from critique.analysis.memory.arms import ProbeTable, probe_run
from critique.analysis.study.cells import over_users, percent_correct
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
    run = probe_run(path, vocab.OVERTURN, vocab.PROBE, problems)
    if run is None:
        return []
    by, preference = run.by, run.preference
    alone = by.get(LYING, {})
    rows = []
    for condition in PAIRS:
        mine = by.get(condition, {})
        if not mine:
            continue
        fooled = [key for key, r in alone.items() if r.get("correct") is not True and key in mine]
        rows.append({"model": run.model, "dataset": run.dataset, "condition": condition,
                     "first": condition.split("+", 1)[0], "provenance": condition.endswith("@provenance"),
                     "wins": _rate(list(mine.values()), preference),
                     "overturn": _rate([mine[k] for k in fooled], preference), "overturn_of": len(fooled),
                     "truth": _rate(list(by.get(TRUTH, {}).values()), preference),
                     "lying": _rate(list(alone.values()), preference), "n": len(mine),
                     "errors": sum(bool(r.get("error")) for r in mine.values())})
    return rows


TABLE = ProbeTable(vocab.OVERTURN, KEY, TITLE, COLUMNS, NOTE, run_rows)
table = TABLE.table


def text(path: Path) -> str:
    """The run's rows as markdown (what `critique probe overturn` prints)."""
    return TABLE.text(path, "no pair condition answered")
