"""Which option a text names as the answer: the one reading of labels, for the answer parser
(critique.engine.parsing reads a reply's answer with it), the critique stage's ``assertion_mismatch``,
the suggestibility probe's ``delivered`` and the analysis (``critique audit``), which may import only
``critique.base``. Texts are read folded and options found with one negation rule (critique.base.labels),
so the parser and the check never name different options for one text. Reads text only; never raises.
"""

from __future__ import annotations

import re

from critique.base import labels

_NOUN = r"(?:answer|option|choice|label|ordering|response)"
_LEAD = rf"(?i:\b(?:(?:correct|right|true|gold|best|actual|final|expected)\s+{_NOUN}|{_NOUN}))"
_VERB = r"(?i:\s*(?:(?:is|was|would\s+be|should\s+be|should\s+have\s+been|must\s+be)\s*:?|[:=]))\s*"
_PREFIX = rf"(?i:(?:{_NOUN}|number)\s*)?[\"'(\[]?\s*"
_RIGHT = r"(?i:\s+(?:is|was)\s+(?:the\s+)?(?:correct|right)\b)"
_MORE = r"\s*,?\s*(?:or|and|/|&)\s*"  # "3 or 4", "3/4": no single answer
_WHOLE = re.compile(rf"^\s*(?:(?:the\s+)?{_LEAD}{_VERB})?{_PREFIX}")  # "Answer: b", "The answer is (b)"
_ALONE = r"(?<![\w+\-])"  # an option is not the end of a word or number ("13", "-1")
_SHORT_WORDS = 3  # a text of at most this many words may simply name its option ("paper A", "A, not B")


def _written(space: list[str]) -> dict[str, set[str]]:
    """Each option's spellings as matched (folded, and by its key: "(A)" is also "a"), with how each is
    written (visible, in its own case)."""
    found: dict[str, set[str]] = {}
    for option in space:
        shown = labels.visible(option).strip()
        for spelling in {shown, shown.strip(labels.EDGE)}:
            if spelling:
                found.setdefault(labels.fold(spelling), set()).add(spelling)
    return found


def _option_pattern(space: list[str]) -> str:
    """The options' folded spellings as alternatives, longest first, not followed by more of a word or
    number ("30", "2.5", "é")."""
    shown = [re.escape(s) for s in sorted(_written(space), key=len, reverse=True)]
    return "(?P<opt>" + "|".join(shown) + r")(?![\w\u0300-\u036f]|[.,]\d)"


def _counts(text: labels.Folded, match: re.Match, written: dict[str, set[str]]) -> bool:
    """The option a match found names it: a one-letter option only in its own case or in brackets (so that
    "a" in a sentence is not option A, and "b) ..." is B), and never when it is denied (labels.negated:
    "not 2", "A is wrong")."""
    start, end = match.span("opt")
    spellings = written[match.group("opt")]
    bracketed = text.text[start - 1:start] == "(" or text.text[end:end + 1] == ")"
    if all(len(s) == 1 and s.isalpha() for s in spellings) and text.written(start, end) not in spellings \
            and not bracketed:
        return False
    return not labels.negated(text.text, start, end)


def _stated(text: labels.Folded, opt: str, written) -> list[re.Match] | None:
    """Rule 1: the option the text is, or names as the answer; None for "3 or 4"."""
    whole = re.fullmatch(rf"\s*{_PREFIX}{opt}\s*[\"')\]]?\s*[.!]?\s*", text.text)
    found = [whole] if whole else []
    for match in re.finditer(rf"{_LEAD}{_VERB}{_PREFIX}{opt}", text.text):
        if re.match(rf"{_MORE}{_PREFIX}{opt}", text.text[match.end():]):
            return None
        found.append(match)
    found += re.finditer(rf"(?:^|(?<=[^\w])){_PREFIX}{opt}[\"')\]]?{_RIGHT}", text.text)
    return [m for m in found if _counts(text, m, written)]


def _leading(text: labels.Folded, opt: str, written) -> list[re.Match]:
    """Rule 2: the option the text begins with, then punctuation, and no second option right after it."""
    lead = re.match(rf"\s*[\"'(\[]?\s*{opt}\s*[\"')\]]?\s*(?P<sep>[.,:;!)])(?!\d)", text.text)
    if not lead or (lead.group("sep") == "," and re.match(rf"\s*{_PREFIX}{opt}", text.text[lead.end():])):
        return []
    return [lead] if _counts(text, lead, written) else []


def _short(text: labels.Folded, opt: str, written) -> list[re.Match]:
    """Rule 3: the options named in a text of at most _SHORT_WORDS words ("paper A", "A, not B")."""
    if len(text.text.split()) > _SHORT_WORDS:
        return []
    return [m for m in re.finditer(rf"{_ALONE}{opt}", text.text) if _counts(text, m, written)]


def asserted_option(text, space: list[str]) -> str | None:
    """The option of ``space`` that ``text`` (a critique's ``correct_answer``, a reply's answer) names as the
    answer, or None (no option named as the answer, or several).

    The text is read folded (critique.base.labels.fold: "\\u200f2" is "2", "STRASSE" is "straße"), and an
    option that is denied counts for nothing (labels.negated: "not 2", "isn't A", "A is wrong", "no A").
    Strict, in this order:
    1. the text is the option ("3", "(B)", "Option B", "Answer: b", "No."), or names it as the answer ("The
       correct answer is 3, not 2." -> "3", "Answer: B", "Option 2 is correct");
    2. only when 1 finds nothing: the text begins with the option, then a comma, period, colon,
       semicolon, bracket or "!" ("Yes, the study shows ..." -> "yes", "2. quince, file, ..." -> "2",
       "B) ...", "A, not B" -> "A"), and names no second option right after it;
    3. only when 2 finds nothing: a text of at most three words names one option ("paper A").
    A stray option in a sentence that names no answer counts for nothing ("There are 3 conditions",
    "the answer is a comedy", "There is no evidence"), and so do "3 or 4" and "not 2"."""
    if not isinstance(text, str) or not space:
        return None
    whole = labels.lookup(text, space)
    if whole is not None:
        return whole  # the text is the option, in any case ("b" alone is option B)
    folded = labels.Folded.of(text[:2000])
    whole = labels.lookup(_WHOLE.sub("", folded.text, count=1), space)
    if whole is not None:
        return whole
    opt, written = _option_pattern(space), _written(space)
    if not written:
        return None
    found = _stated(folded, opt, written)
    if found is None:
        return None
    found = found or _leading(folded, opt, written) or _short(folded, opt, written)
    named = {labels.lookup(m.group("opt"), space) for m in found} - {None}
    return named.pop() if len(named) == 1 else None


def agrees(text, gold: str, space: list[str]) -> bool:
    """The text asserts ``gold`` as the answer (strictly: ``asserted_option``)."""
    return asserted_option(text, space) == gold
