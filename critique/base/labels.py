"""How a text is matched to a label of the answer space: one normalisation for the answer parser
(critique.engine.parsing), the critique's assertion check (critique.base.assertion) and so the audit.

Two texts name the same label when they are equal after ``fold`` (Unicode NFKC, case folded, surrounding
white space dropped), or else after ``key`` (``fold``, then the quotes, brackets, stars and periods around
it dropped: ``(A)``, ``"a"``, ``A.`` and ``a`` are one key). A dataset whose labels share a key could
never be told apart, so it is refused when loaded (``collisions``).
"""

from __future__ import annotations

import unicodedata

# What may stand around an answer without changing it: quotes, brackets, emphasis, a closing period.
EDGE = ".\"'`*()[]{}<>\u201c\u201d\u2018\u2019 \t\r\n"
# A word that turns the option after it into its opposite ("Not A", "never B").
NEGATIONS = frozenset({"not", "never", "isn't", "isnt"})


def fold(text) -> str:
    """``text`` in Unicode NFKC, case folded, without surrounding white space."""
    return unicodedata.normalize("NFKC", str(text)).casefold().strip()


def key(text) -> str:
    """``fold(text)`` without the quotes, brackets, stars and periods around it."""
    return fold(text).strip(EDGE)


def lookup(text, space: list[str]) -> str | None:
    """The label of ``space`` that ``text`` is, by ``fold`` first and then by ``key``; None when it is none."""
    folded, keyed = fold(text), key(text)
    by_fold = {fold(label): label for label in space}
    if folded in by_fold:
        return by_fold[folded]
    by_key = {key(label): label for label in space if key(label)}
    return by_key.get(keyed)


def collisions(space: list[str]) -> list[tuple[str, str]]:
    """Pairs of labels of ``space`` that share a key, in the order they are listed."""
    first: dict[str, str] = {}
    pairs = []
    for label in space:
        if key(label) in first:
            pairs.append((first[key(label)], label))
        else:
            first[key(label)] = label
    return pairs
