"""Counts of a run's records per (stage, strategy, user): what every table is computed from.

The reader of a run's logs (analysis.reading.read: this process, or a worker process on a machine of
more than 2 cores) counts its records as it reads them, so the tables cost nothing per record
once the logs are read. A tally is a list, in the order of
the constants below; a missing answer (timeout, parse failure, error, correct = null) counts as
wrong, an error is counted as an error and never as a parse failure (logs written before the
runner stopped marking errored answers parse_failed say both), tokens are summed over the
records whose call answered (no error), a record reports reasoning when its reasoning_tokens is
above 0, OVERFLOWS counts the prompts that did not fit the model's context (not sent: counted
wrong, like a timeout; absent in older logs), CHECKED / DELIVERED / DELIVERED_CORRECT count a
probe's critiques whose delivery was checked, those that argued the label they were told to, and
the right answers among those, WITH_PROMPT / PROMPT_TOKENS count the answered records that report
their prompt (input) tokens and sum them, GOLD counts the records per gold label (the
majority-class baseline), and ANSWERS counts the records per (gold label, answer given) with a gold
label: the confusion counts (analysis.study.answers; the answer None where none counts, see `given`).
"""

from __future__ import annotations

from critique.base.offline_totals import counts as _counts  # a token count that counts

(RECORDS, CORRECT, TIMEOUT, PARSE_FAILED, ERRORS, OVERFLOWS, ANSWERED, WITH_TOKENS, TOKENS, CHECKED, DELIVERED,
 DELIVERED_CORRECT, WITH_PROMPT, PROMPT_TOKENS, REASONING, GOLD, ANSWERS) = range(17)


def new() -> list:
    return [0] * REASONING + [False, {}, {}]


def add(into: list, tally: list) -> None:
    for i in range(REASONING):
        into[i] += tally[i]
    into[REASONING] = into[REASONING] or tally[REASONING]
    for slot in (GOLD, ANSWERS):
        counts = into[slot]
        for key, count in tally[slot].items():
            counts[key] = counts.get(key, 0) + count


def label(value):
    """A category: None (and NaN) stay missing; anything unhashable becomes its text."""
    if type(value) is str or value is None:
        return value
    if isinstance(value, float) and value != value:
        return None
    return value if isinstance(value, (int, float)) else str(value)


def _user(user, users: bool):
    """The user a record counts for: "" where there is none, or the data has no users."""
    if not users or user is None:
        return ""
    if type(user) is str:
        return user
    user = label(user)
    return "" if user is None else user


def latest_per_item(rows, users: bool = True) -> dict[tuple, tuple]:
    """(stage, strategy, user, item_id) -> the last row of one run with that key: a later record of
    an item replaces an earlier one (a rerun after a failed call). Keys are as they are counted
    (see `label`; users only where `users`, the data being preference data)."""
    last = {}
    for row in rows:
        stage, strategy, user, item = row[:4]
        last[(stage if type(stage) is str else label(stage), strategy if type(strategy) is str else label(strategy),
              _user(user, users), item if type(item) is str else label(item))] = row
    return last


def predictions(items: dict[tuple, tuple], plain: bool = True) -> dict[tuple, list]:
    """(stage, strategy, user) -> tally, from what `latest_per_item` keeps of rows of
    analysis.reading.read.PREDICTION_FIELDS.

    Tables 3, 5 and 9 use the timeouts, parse failures and tokens of plain runs only: of other
    runs (probes, ablations) only the verdicts, the errors and the gold labels are counted.
    """
    tallies: dict[tuple, list] = {}
    get = tallies.get
    for (stage, strategy, user, _), row in items.items():
        _, _, _, _, correct, timeout, parse_failed, tokens, reasoning, error, gold, overflow, delivered, prompt, \
            answer = row
        key = (stage, strategy, user)
        tally = get(key)
        if tally is None:
            tally = tallies[key] = new()
        if plain:
            _count(tally, correct, timeout, parse_failed, tokens, reasoning, error, prompt)
            if overflow is True:
                tally[OVERFLOWS] += 1
        else:
            _count(tally, correct, None, None, None, None, error)
        if delivered is True or delivered is False:  # a probe's critique, checked: did it argue its label?
            tally[CHECKED] += 1
            if delivered:
                tally[DELIVERED] += 1
                tally[DELIVERED_CORRECT] += correct is True
        if gold is not None:
            pair = answer_pair(gold, answer, timeout, parse_failed, error, overflow)
            counts = tally[GOLD]
            counts[pair[0]] = counts.get(pair[0], 0) + 1
            tally[ANSWERS][pair] = tally[ANSWERS].get(pair, 0) + 1
    return tallies


def answer_pair(gold, answer, timeout, parse_failed, error, overflow) -> tuple:
    """A record's key in the confusion counts (ANSWERS): its gold label and the answer it gave (`given`)."""
    return label(gold), given(answer, timeout, parse_failed, error, overflow)


def given(answer, timeout, parse_failed, error, overflow):
    """The answer a record gave, as the confusion counts read it: None where a missing answer counts wrong (a
    timeout, a parse failure, whose answer is a seeded wrong option, an error, a prompt that did not fit)."""
    if timed_out(timeout) or parse_failed is True or not (error is None or error == "") or overflow is True:
        return None
    return label(answer)


def timed_out(timeout) -> bool:
    """A timeout: the reply was cut at the token limit (max_tokens; the record's ``timeout``, its call's
    finish_reason "length": critique.llm.client.LLMResult.timeout)."""
    return timeout is True


def _count(tally: list, correct, timeout, parse_failed, tokens, reasoning, error, prompt=None) -> None:
    tally[RECORDS] += 1
    if correct is True:
        tally[CORRECT] += 1
    if timed_out(timeout):
        tally[TIMEOUT] += 1
    if error is None or error == "":
        if parse_failed is True:
            tally[PARSE_FAILED] += 1
        tally[ANSWERED] += 1
        if _counts(tokens):
            tally[WITH_TOKENS] += 1
            tally[TOKENS] += tokens
        if _counts(prompt):
            tally[WITH_PROMPT] += 1
            tally[PROMPT_TOKENS] += prompt
    else:
        tally[ERRORS] += 1
    if reasoning and not tally[REASONING] and _counts(reasoning) and reasoning > 0:
        tally[REASONING] = True


def answered_calls(rows) -> list:
    """The rows of analysis.reading.read.CALL_FIELDS whose call answered: a failed call answered nothing
    (its rerun has its own record)."""
    return [row for row in rows if row[5] is None or row[5] == ""]  # error


def calls(rows) -> dict[str, list]:
    """stage -> tally, from answered rows of analysis.reading.read.CALL_FIELDS."""
    tallies: dict[str, list] = {}
    for stage, _, _, tokens, reasoning, _, _, _, prompt in rows:
        tally = tallies.get(label(stage))
        if tally is None:
            tally = tallies[label(stage)] = new()
        _count(tally, None, None, None, tokens, reasoning, None, prompt)
    return tallies
