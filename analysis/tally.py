"""Counts of a run's records per (stage, strategy, user): what every table is computed from.

A worker process reads a run's logs and sends back these counts, not the records, so the
tables cost nothing per record once the logs are read. A tally is a list, in the order of
the constants below; a missing answer (timeout, parse failure, correct = null) counts as
wrong, tokens are summed over the records whose call answered (no error), and a record
reports reasoning when its reasoning_tokens is above 0.
"""

from __future__ import annotations

RECORDS, CORRECT, TIMEOUT, PARSE_FAILED, ANSWERED, WITH_TOKENS, TOKENS, REASONING = range(8)
PREDICTION_KEY = 3  # a prediction row starts with stage, strategy, user, item_id (see analysis.read)


def new() -> list:
    return [0, 0, 0, 0, 0, 0, 0, False]


def add(into: list, tally: list) -> None:
    for i in range(REASONING):
        into[i] += tally[i]
    into[REASONING] = into[REASONING] or tally[REASONING]


def label(value):
    """A category: None (and NaN) stay missing; anything unhashable becomes its text."""
    if type(value) is str or value is None:
        return value
    if isinstance(value, float) and value != value:
        return None
    return value if isinstance(value, (int, float)) else str(value)


def _number(value) -> bool:
    return type(value) is int or type(value) is float  # JSON numbers; not bool


def _count(tally: list, correct, timeout, parse_failed, tokens, reasoning, error) -> None:
    tally[RECORDS] += 1
    tally[CORRECT] += correct is True
    tally[TIMEOUT] += timeout is True
    tally[PARSE_FAILED] += parse_failed is True
    if error is None or error == "":
        tally[ANSWERED] += 1
        if _number(tokens):
            tally[WITH_TOKENS] += 1
            tally[TOKENS] += tokens
    if not tally[REASONING] and _number(reasoning) and reasoning > 0:
        tally[REASONING] = True


def predictions(rows, plain: bool = True, users: bool = True) -> dict[tuple, list]:
    """(stage, strategy, user) -> tally, from rows of analysis.read.PREDICTION_FIELDS.

    Users count only for preference data (`users`); elsewhere, and where a record has none,
    the user is "". Tables 3, 5 and 9 use the timeouts, parse failures, errors and tokens of
    plain runs only: of other runs (probes, ablations) only the verdicts are counted.
    """
    tallies: dict[tuple, list] = {}
    get = tallies.get
    for stage, strategy, user, _, correct, timeout, parse_failed, tokens, reasoning, error in rows:
        # _count, inlined: this loop runs once per prediction record of a whole study
        key = (stage if type(stage) is str else label(stage), strategy if type(strategy) is str else label(strategy),
               user if type(user) is str and users else "" if user is None or not users else label(user))
        tally = get(key)
        if tally is None:
            tally = tallies[key] = new()
        tally[RECORDS] += 1
        if correct is True:
            tally[CORRECT] += 1
        if not plain:
            continue
        if timeout is True:
            tally[TIMEOUT] += 1
        if parse_failed is True:
            tally[PARSE_FAILED] += 1
        if error is None or error == "":
            tally[ANSWERED] += 1
            if type(tokens) is int or type(tokens) is float:
                tally[WITH_TOKENS] += 1
                tally[TOKENS] += tokens
        if reasoning and not tally[REASONING] and _number(reasoning) and reasoning > 0:
            tally[REASONING] = True
    return tallies


def answered_calls(rows) -> list:
    """The rows of analysis.read.CALL_FIELDS whose call answered: a failed call answered nothing
    (its rerun has its own record)."""
    return [row for row in rows if row[-1] is None or row[-1] == ""]


def calls(rows) -> dict[str, list]:
    """stage -> tally, from answered rows of analysis.read.CALL_FIELDS."""
    tallies: dict[str, list] = {}
    for stage, _, _, tokens, reasoning, _ in rows:
        tally = tallies.get(label(stage))
        if tally is None:
            tally = tallies[label(stage)] = new()
        _count(tally, None, None, None, tokens, reasoning, None)
    return tallies


def latest_per_item(rows) -> list:
    """The rows of one run with a later record of an item replacing an earlier one (a rerun after a
    failed call): the last row per (stage, strategy, user, item_id), in first-seen order."""
    last = {}
    for row in rows:
        last[row[:PREDICTION_KEY + 1]] = row
    return list(last.values())
