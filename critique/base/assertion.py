"""The strict assertion check: which option a critique's ``correct_answer`` names as the answer.

One definition for the engine (the critique stage's ``assertion_mismatch``, the suggestibility
probe's ``delivered``) and for the analysis (``critique audit``), which may import only
``critique.base``. Reads text only; never raises.
"""

from __future__ import annotations

import re
import unicodedata

from critique.base import labels

_NOUN = r"(?:answer|option|choice|label|ordering|response)"
_LEAD = rf"(?i:\b(?:(?:correct|right|true|gold|best|actual|final|expected)\s+{_NOUN}|{_NOUN}))"
_VERB = r"(?i:\s*(?:(?:is|was|would\s+be|should\s+be|should\s+have\s+been|must\s+be)\s*:?|[:=]))\s*"
_PREFIX = rf"(?i:(?:{_NOUN}|number)\s*)?[\"'(\[]?\s*"
_RIGHT = r"(?i:\s+(?:is|was)\s+(?:the\s+)?(?:correct|right)\b)"
_MORE = r"\s*,?\s*(?:or|and|/|&)\s*"  # "3 or 4", "3/4": no single answer


def _spellings(space: list[str]) -> list[str]:
    """Each option as written and by its key (critique.base.labels.key: "(A)" is also "A"), in NFKC."""
    found = {unicodedata.normalize("NFKC", o).strip() for o in space}
    found |= {_key_spelling(o) for o in space if labels.key(o)}
    return sorted(found, key=len, reverse=True)


def _key_spelling(option: str) -> str:
    """``option`` without the punctuation around it, in its own case ("(A)" -> "A")."""
    return unicodedata.normalize("NFKC", option).strip().strip(labels.EDGE)


def _option_pattern(space: list[str]) -> str:
    """The options as alternatives, longest first; a one-letter option only in its own case (so that
    "a" in a sentence is not option A), other options in any case."""
    shown = [re.escape(o) if len(o) == 1 and o.isalpha() else f"(?i:{re.escape(o)})" for o in _spellings(space)]
    return "(?P<opt>" + "|".join(shown) + r")(?![A-Za-z0-9])"


def asserted_option(text, space: list[str]) -> str | None:
    """The option of ``space`` that a critique's ``correct_answer`` asserts as the answer, or None
    (no option named as the answer, or several).

    Strict, in this order:
    1. the text is the option ("3", "(B)", "Option B", "No."), or names it as the answer ("The
       correct answer is 3, not 2." -> "3", "Answer: B", "Option 2 is correct");
    2. only when 1 finds nothing: the text begins with the option, then a comma, period, colon,
       semicolon, bracket or "!" ("Yes, the study shows ..." -> "yes", "2. quince, file, ..." -> "2",
       "B) ..."), and names no second option right after it.
    A stray option in a sentence that names no answer counts for nothing ("There are 3 conditions",
    "the answer is a comedy", "There is no evidence"), and so do "3 or 4" and "not 2"."""
    if not isinstance(text, str) or not space:
        return None
    text = unicodedata.normalize("NFKC", text[:2000])
    whole = labels.lookup(re.sub(rf"^\s*{_PREFIX}", "", text), space) or labels.lookup(text, space)
    if whole is not None:
        return whole  # the text is the option, in any case ("b" alone is option B, as for the answer parser)
    opt = _option_pattern(space)
    whole = re.fullmatch(rf"\s*{_PREFIX}{opt}\s*[\"')\]]?\s*[.!]?\s*", text)
    found = [whole.group("opt")] if whole else []
    for match in re.finditer(rf"{_LEAD}{_VERB}{_PREFIX}{opt}", text):
        if re.match(rf"{_MORE}{_PREFIX}{opt}", text[match.end():]):
            return None
        found.append(match.group("opt"))
    found += [m.group("opt") for m in re.finditer(rf"(?:^|(?<=[^A-Za-z0-9])){_PREFIX}{opt}[\"')\]]?{_RIGHT}", text)]
    if not found:
        lead = re.match(rf"\s*[\"'(\[]?\s*{opt}\s*[\"')\]]?\s*(?P<sep>[.,:;!)])(?!\d)", text)
        if lead and not (lead.group("sep") == "," and re.match(rf"\s*{_PREFIX}{opt}", text[lead.end():])):
            found.append(lead.group("opt"))
    named = {labels.lookup(o, space) for o in found} - {None}
    return named.pop() if len(named) == 1 else None


def agrees(text, gold: str, space: list[str]) -> bool:
    """The text asserts ``gold`` as the answer (strictly: ``asserted_option``)."""
    return asserted_option(text, space) == gold
