"""Each offline stage's call totals, as the run's manifest keeps them (its field ``offline_totals``).

A prediction record carries the tokens of the call that answered it. The train stage's other calls -- the
critiques, a critique asked again (--on-mismatch recritique) and the summaries: the offline stages, STAGES --
answer no prediction, and the tables count them from calls.jsonl (Table 5's offline costs; Table 3's reasoning
models). The one writer of a run directory (critique.engine.run_directory) adds every call record it writes to
a `Totals` and writes them into the manifest when the run finishes, with the size calls.jsonl had then. The
analysis (critique.analysis.reading.consistency.offline) takes them instead of reading the calls while calls.jsonl still
has that size, and reads the calls otherwise: an older run, an unfinished one, a log changed since.

A `Totals` counts what the analysis counts of the calls (tests/test_offline_totals.py holds the two equal): the
answered calls of STAGES (no error), each request once (an answered record of a request already counted is
counted in ``repeated`` alone), per stage in the order first met: the calls, those whose completion and prompt
tokens count (`counts`) and their sums, and whether one reported reasoning tokens; and the models the calls name.
"""

from __future__ import annotations

import math

from critique.base import vocab

STAGES = (vocab.CRITIQUE, vocab.RECRITIQUE, vocab.SUMMARY)  # the calls that answer no prediction
FIELD = "offline_totals"  # the manifest's field (critique.base.manifest_fields)


def counts(value) -> bool:
    """A token count that counts: a JSON number (not a bool), finite (not NaN or Infinity) and not negative
    (a negative count is no count: it is left out as a missing one is)."""
    return (type(value) is int and value >= 0) or (type(value) is float and math.isfinite(value) and value >= 0)


class Totals:
    """The offline stages' totals of the call records added, in the order calls.jsonl holds them."""

    def __init__(self):
        self.stages: dict = {}  # stage -> [calls, completion_calls, completion_tokens, prompt_calls, ..., reasoning]
        self.models: list = []  # the models the counted calls name, in the order first met
        self.repeated = 0
        self._seen: set = set()  # the request hashes counted

    def add(self, record: dict) -> None:
        stage, error, key = record.get("stage"), record.get("error"), record.get("request_hash")
        if stage not in STAGES or not (error is None or error == ""):
            return
        if key is not None and key in self._seen:
            self.repeated += 1
            return
        self._seen.add(key)
        model = record.get("model")
        if model is not None and model not in self.models:
            self.models.append(model)
        found = self.stages.setdefault(stage, [0, 0, 0, 0, 0, False])
        found[0] += 1
        for at, name in ((1, "completion_tokens"), (3, "prompt_tokens")):
            if counts(record.get(name)):
                found[at] += 1
                found[at + 1] += record[name]
        reasoning = record.get("reasoning_tokens")
        found[5] = found[5] or bool(reasoning and counts(reasoning) and reasoning > 0)

    def value(self, calls_bytes: int) -> dict:
        """The manifest's field: these totals, of a calls.jsonl of ``calls_bytes`` bytes."""
        names = ("calls", "completion_calls", "completion_tokens", "prompt_calls", "prompt_tokens", "reasoning")
        return {"calls_bytes": calls_bytes, "models": list(self.models), "repeated": self.repeated,
                "stages": [{"stage": stage, **dict(zip(names, found))} for stage, found in self.stages.items()]}
