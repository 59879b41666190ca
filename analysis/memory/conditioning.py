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

from critique.analysis.memory.arms import ProbeTable, against_none, arm_order, mean, probe_run
from critique.analysis.stats.core import MDE_NOTE
from critique.analysis.study.cells import over_users, percent_correct
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


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    run = probe_run(path, vocab.CONDITIONING, vocab.PROBE, problems)
    if run is None:
        return []
    by = run.by
    rows = []
    for arm in sorted(by, key=arm_order):
        mine = list(by[arm].values())
        row = {**run.row(arm), "preamble": arm.split("@")[0], "length": arm_order(arm)[2],
               "entries": mean([len(r.get("entries") or []) for r in mine]),
               "accuracy": over_users(mine, percent_correct, run.preference), "n": len(mine),
               "errors": sum(bool(r.get("error")) for r in mine),
               "prompt_tokens": mean([r.get("prompt_tokens") for r in mine])}
        rows.append(row)
    return against_none(rows, by, NONE)


TABLE = ProbeTable(vocab.CONDITIONING, KEY, TITLE, COLUMNS, NOTE, run_rows)
table, text = TABLE.table, TABLE.text
