"""What a ``critique.Learner`` is given and gives back: labeled items (``fit``, ``evaluate``), questions without a
label (``predict``, ``learn``), one answer (``Prediction``) and the score of a strategy on labeled items
(``Evaluation``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from critique.datasets.splits import Item


@dataclass(frozen=True)
class Prediction:
    """One answer of ``Learner.predict``.

    ``answer`` is an option of the answer space, or None when there is none to give: the reply
    could not be parsed (``parse_failed``), was cut by the token limit (``timeout``), or the
    call failed (``error``). ``retrieved``: ids of the episodic entries in the prompt, nearest
    first (``learner.memory.entries``).
    """

    id: str
    question: str
    strategy: str
    answer: str | None
    parse_failed: bool
    timeout: bool
    error: str | None
    retrieved: list[str]
    user: str | None = None
    request_hash: str | None = None


@dataclass(frozen=True)
class Evaluation:
    """One strategy on labeled items (``Learner.evaluate``): accuracy (errors, parse failures and cut replies count
    wrong, as in the study's Table 1) with its 95% Wilson interval, and each item's record (``records``: the
    predictions logged with stage test)."""

    strategy: str
    n: int
    correct: int
    accuracy: float | None  # correct / n; None without an item
    low: float | None
    high: float | None
    parse_failures: int
    timeouts: int
    errors: int
    records: list[dict] = field(default_factory=list, repr=False)


def evaluation(strategy: str, records: list[dict]) -> Evaluation:
    """The score of ``strategy`` from its test records."""
    from critique.analysis.stats.core import wilson

    correct = sum(r.get("correct") is True for r in records)
    low, high = wilson(correct, len(records))
    return Evaluation(strategy, len(records), correct, correct / len(records) if records else None, low, high,
                      sum(bool(r.get("parse_failed")) for r in records), sum(bool(r.get("timeout")) for r in records),
                      sum(bool(r.get("error")) for r in records), records)


def labeled(position: int, x, named: bool = False) -> Item:
    """A labeled item: (question, label), (id, question, label), an ``Item`` or a dict with question/answer (and
    id). One given without an id is named by its ``position``, or with ``named`` by a hash of its question (so
    that items given in another call never share an id)."""
    if isinstance(x, Item):
        return x
    if isinstance(x, Mapping):
        return Item(str(x["id"]) if "id" in x else _unnamed(position, str(x["question"]), named), str(x["question"]),
                    str(x["answer"]), x.get("user"), dict(x.get("meta") or {}))
    if isinstance(x, (tuple, list)) and len(x) in (2, 3):
        *ident, question, answer = x
        return Item(str(ident[0]) if ident else _unnamed(position, str(question), named), str(question), str(answer))
    raise TypeError(f"item {position}: expected (question, label), (id, question, label), an Item or a dict, "
                    f"not {x!r:.80}")


def _unnamed(position: int, text: str, named: bool) -> str:
    return text_id(text) if named else str(position)


def question(q, user: str | None) -> Item:
    """An unlabeled question; a string's id is a hash of its text (so a repeat is recognised)."""
    if isinstance(q, Item):
        return Item(q.id, q.question, "", q.user if q.user is not None else user, q.meta)
    text = str(q)
    if not text.strip():
        raise ValueError("empty question")
    return Item(text_id(text), text, "", user)


def text_id(text: str) -> str:
    """The id of a question given as text: a hash of it."""
    return "q-" + hashlib.sha256(text.encode()).hexdigest()[:16]
