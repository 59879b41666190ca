"""A run's records checked against each other and against its manifest, as they are read (analysis.reading.read):
a repeated call line is counted once, and a run whose calls name another model than its manifest, or that
answers more test items than its dataset has, is left out, each said in one line. The offline stages' calls
are taken from the manifest's totals (critique.base.offline_totals) while calls.jsonl is as they were written
(`offline`), with the same checks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NamedTuple

from critique.analysis.reading import tally
from critique.base import offline_totals, rundir, vocab


class Offline(NamedTuple):
    """What the calls pass finds of a run's offline calls, from its manifest's totals."""
    tallies: dict  # stage -> tally (as analysis.reading.tally.calls counts them)
    models: list  # the models the calls name
    repeated: int  # answered records of a request already counted


def offline(path: str, totals) -> Offline | None:
    """The manifest's offline totals (``totals``) of the run at ``path``, read as the calls pass reads calls.jsonl;
    None when they cannot stand for it: absent, written when calls.jsonl had another size, or not as the writer
    writes them (the calls are then read)."""
    if not isinstance(totals, dict):
        return None
    try:
        size = (Path(path) / rundir.CALLS).stat().st_size
    except FileNotFoundError:
        size = 0
    except OSError:
        return None
    stages, models, repeated = totals.get("stages"), totals.get("models"), totals.get("repeated")
    if (type(totals.get("calls_bytes")) is not int or totals["calls_bytes"] != size or not isinstance(stages, list)
            or not isinstance(models, list) or not _number(repeated) or not all(map(_stage, stages))
            or len({found["stage"] for found in stages}) < len(stages)):
        return None
    return Offline({found["stage"]: _tally(found) for found in stages}, models, repeated)


def _number(value) -> bool:
    return type(value) is int and value >= 0


def _stage(found) -> bool:
    """One stage's totals as critique.base.offline_totals writes them."""
    return (isinstance(found, dict) and found.get("stage") in offline_totals.STAGES
            and all(_number(found.get(k)) for k in ("calls", "completion_calls", "prompt_calls"))
            and all(offline_totals.counts(found.get(k)) for k in ("completion_tokens", "prompt_tokens"))
            and type(found.get("reasoning")) is bool)


def _tally(found: dict) -> list:
    """The tally analysis.reading.tally.calls counts of the calls that ``found`` totals."""
    counted = tally.new()
    counted[tally.RECORDS] = counted[tally.ANSWERED] = found["calls"]
    counted[tally.WITH_TOKENS], counted[tally.TOKENS] = found["completion_calls"], found["completion_tokens"]
    counted[tally.WITH_PROMPT], counted[tally.PROMPT_TOKENS] = found["prompt_calls"], found["prompt_tokens"]
    counted[tally.REASONING] = found["reasoning"]
    return counted


def answered(path: str, rows: list, offline: Offline | None, problems: list[str]) -> tuple[list, list]:
    """(the answered call rows, each request once, and the models they name); with the manifest's totals
    (``offline``) no rows and the totals' models, the repeated records said as `once_each` says them."""
    if offline is not None:
        repeated(path, offline.repeated, problems)
        return [], offline.models
    rows = once_each(path, tally.answered_calls(rows), problems)
    return rows, [row[7] for row in rows]  # model (CALL_FIELDS)


def once_each(path: str, calls: list, problems: list[str]) -> list:
    """The answered call rows with each request once: a second answered record of a request is a repeated
    line (the run never asks a logged request again), counted once and said."""
    seen, kept = set(), []
    for row in calls:
        key = row[6]  # request_hash (CALL_FIELDS)
        if key is not None and key in seen:
            continue
        seen.add(key)
        kept.append(row)
    repeated(path, len(calls) - len(kept), problems)
    return kept


def repeated(path: str, count: int, problems: list[str]) -> None:
    if count:
        problems.append(f"{path}: {count} call records repeat an answered request of the run "
                        f"({rundir.CALLS}); each request counted once")


def contradiction(path: str, predictions: dict, models: list, model: str | None, n_test: int | None) -> str | None:
    """Why the records of a run contradict its manifest (another model among the ``models`` its calls name,
    more test items answered than its dataset has), or None."""
    others = sorted({str(name) for name in models if name is not None and name != model})
    if model is not None and others:
        return (f"{path}: its manifest names the model {model!r} but its calls were made by {', '.join(others)}; "
                "left out (was the manifest edited?)")
    answered = Counter(strategy for stage, strategy, _, _ in predictions if stage == vocab.TEST)
    over = sorted((s for s, n in answered.items() if n_test and n > n_test), key=str)  # 0: unknown (a fit's)
    if over:
        return (f"{path}: {over[0]} answers {answered[over[0]]} test items but its dataset has {n_test} "
                "(manifest dataset.n_test); left out (predictions for items not in the dataset?)")
    return None
