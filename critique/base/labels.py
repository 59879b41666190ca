"""How a text is matched to a label of the answer space: one normalisation and one negation rule for the
answer parser (critique.engine.parsing), the critique's assertion check (critique.base.assertion) and so the
audit.

Two texts name the same label when they are equal after ``fold`` (invisible characters dropped, Unicode NFKC,
case folded, surrounding white space dropped), or else after ``key`` (``fold``, then the quotes, brackets,
stars and periods around it dropped: ``(A)``, ``"a"``, ``A.``, ``\\u200fA`` and ``a`` are one key). An option
named in a text counts for nothing when ``negated`` ("not A", "isn't A", "A is wrong"). A dataset whose labels
could not be told apart, or that a reply could not name in one line, is refused when loaded (``problem``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# The longest label a dataset may have: an answer space is a set of options a model names, not of passages.
MAX_LABEL_CHARS = 200
# What may stand around an answer without changing it: quotes, brackets, emphasis, a closing period.
EDGE = ".\"'`*()[]{}<>\u201c\u201d\u2018\u2019 \t\r\n"
# A word that turns the option right after it into its opposite ("Not A", "never B", "neither A nor B").
NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "isn't", "isn\u2019t", "isnt"})
_NEGATION = "|".join(re.escape(word) for word in sorted(NEGATIONS, key=len, reverse=True))
# Between a negation and the option: white space, a noun ("not option 2"), an opening quote or bracket.
_BEFORE = re.compile(rf"(?<![\w'\u2019])(?:{_NEGATION})\s+(?:(?:the\s+)?(?:answer|option|choice|label|number)\s+)?"
                     rf"[\"'\u2018\u201c(\[]?\s*$")
# After the option: "is wrong", "is incorrect", "is not ...", "isn't ...", and so with "was".
_AFTER = re.compile(r"[\"'\u2019\u201d)\]]?\s*(?:(?:is|was)\s+(?:not|wrong|incorrect)|(?:isn|wasn)['\u2019]?t)(?!\w)")


def invisible(char: str) -> bool:
    """``char`` is a format character (Unicode category Cf: U+200B, U+200F, U+00AD, U+2060, ...) or a
    variation selector (U+FE0F, ...): it changes nothing a reader sees, so it changes no label."""
    code = ord(char)
    return (unicodedata.category(char) == "Cf" or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF
            or 0x180B <= code <= 0x180F)


def visible(text) -> str:
    """``text`` without its invisible characters, in Unicode NFKC, in its own case."""
    return unicodedata.normalize("NFKC", "".join(c for c in str(text) if not invisible(c)))


def fold(text) -> str:
    """``visible(text)`` case folded, without surrounding white space: the one form labels are compared in."""
    return visible(text).casefold().strip()


def key(text) -> str:
    """``fold(text)`` without the quotes, brackets, stars and periods around it."""
    return fold(text).strip(EDGE)


@dataclass(frozen=True)
class Folded:
    """A text as it is matched (``text``: ``fold`` without the strip) and as it was written (``shown``:
    ``visible``), with the place in ``shown`` of each character of ``text``; so a match can be read in its own
    case ("a" in a sentence is not option A)."""
    text: str
    shown: str
    origin: tuple[int, ...]

    @classmethod
    def of(cls, raw) -> "Folded":
        shown = visible(raw)
        pieces = [(at, char.casefold()) for at, char in enumerate(shown)]
        return cls("".join(p for _, p in pieces), shown, tuple(at for at, p in pieces for _ in p))

    def written(self, start: int, end: int) -> str:
        """The characters of ``shown`` that ``text[start:end]`` came from."""
        return self.shown[self.origin[start]:self.origin[end - 1] + 1] if start < end else ""


def negated(text: str, start: int, end: int) -> bool:
    """The option at ``text[start:end]`` (a folded text) is denied: a negation word right before it ("not A",
    "isn't option A", "neither A nor B"), or "is wrong", "is incorrect", "is not" right after it. Text between
    a negation and the option other than white space, a noun or a quote ("No, A") ends the negation; so
    "A, not B" names A."""
    return bool(_BEFORE.search(text[max(0, start - 80):start]) or _AFTER.match(text, end))


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


def problem(space: list[str]) -> str | None:
    """Why ``space`` cannot be an answer space, naming the labels at fault; None when it can. A label must
    be one line of at most MAX_LABEL_CHARS characters with something visible in it, and no two labels may share
    a key (they would differ only in case, Unicode form, invisible characters or the punctuation around them)."""
    for label in space:
        if label.splitlines() != [label]:
            return f"label {label!r} holds a line break (a reply names its answer in one line)"
        if len(label) > MAX_LABEL_CHARS:
            return f"label {label[:40]!r}... is {len(label)} characters long, more than {MAX_LABEL_CHARS}"
        if not key(label):
            return f"label {label!r} has nothing visible to name it by"
    for first, second in collisions(space)[:1]:
        return (f"labels {first!r} and {second!r} cannot be told apart (they differ only in case, Unicode form, "
                f"invisible characters or the punctuation around them)")
    return None
