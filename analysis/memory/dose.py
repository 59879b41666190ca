"""The dose-response table (docs/memory.md section 4): accuracy as injected memory grows, own against irrelevant.

Reads the runs of `critique probe dose` (manifest probe {name: dose, values, irrelevant_dataset, irrelevant_memory}) and
reports, per run and arm (none; own@K: EP_CRIT's prompt with the K nearest entries of the run's memory;
irrelevant@K: the K nearest of another dataset's):

- `k`, `shown` (the entries shown, on average), `prompt_tokens` (per question, as the provider counted them);
- `accuracy` (%), `n`, `errors` (an error, a timeout, a parse failure or a prompt that did not fit counts wrong;
  preference data: per user, then the mean over users);
- `memory_only` (%): rule R7's lexical check, the answers that are an option a shown note asserts and the
  question does not hold as a word, over the answers where a shown note named such an option (none: the check
  cannot fire, as where the question lists every option);
- against `none` on the same items: the difference in points, the items right only in the arm (`wins`) and only
  without memory (`losses`), the exact McNemar p (the sign test), Holm over the run's arms, and the minimum
  detectable effect.

Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.memory.arms import ProbeTable, against_none, arm_order, mean, probe_run, share
from critique.analysis.stats.core import MDE_NOTE
from critique.analysis.study.cells import over_users, percent_correct
from critique.base import vocab

KEY = "dose"
TITLE = "Dose-response: accuracy as injected memory grows, the run's own against another dataset's (%)"
NONE = "none"
COLUMNS = ["model", "dataset", "arm", "memory", "k", "shown", "prompt_tokens", "accuracy", "n", "errors",
           "memory_only", "vs_none", "wins", "losses", "p", "p_holm", "mde"]
NOTE = ("arm: none (the zero-shot prompt), own@K (EP_CRIT's prompt with the K nearest entries of the run's memory) "
        "or irrelevant@K (the K nearest of another dataset's run); shown: entries shown, on average; memory_only: "
        "answers that are an option a shown note asserts and the question does not hold as a word (rule R7), over "
        "the answers where a shown note named such an option (-: none did, the check cannot fire); vs_none: "
        "points against none on the same items (wins, losses: right only in the arm, only in none); p: exact "
        "McNemar (sign test on those items); p_holm: Holm over the run's arms; errors count wrong; " + MDE_NOTE)


def run_rows(path: Path, problems: list[str]) -> list[dict]:
    run = probe_run(path, vocab.DOSE, vocab.PROBE, problems)
    if run is None:
        return []
    by = run.by
    rows = []
    for arm in sorted(by, key=arm_order):
        records = list(by[arm].values())
        row = {**run.row(arm), "memory": arm.split("@")[0], "k": arm_order(arm)[2],
               "shown": mean([r.get("shown") for r in records]),
               "prompt_tokens": mean([r.get("prompt_tokens") for r in records]),
               "accuracy": over_users(records, percent_correct, run.preference), "n": len(records),
               "errors": sum(bool(r.get("error")) for r in records), "memory_only": share(records, "memory_only")}
        rows.append(row)
    return against_none(rows, by, NONE)


TABLE = ProbeTable(vocab.DOSE, KEY, TITLE, COLUMNS, NOTE, run_rows)
table, text = TABLE.table, TABLE.text
