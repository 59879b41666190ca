"""Admission at write time (docs/memory.md section 4, rule R1): which critiques may enter memory.

``--admission`` (RunConfig.admission):

- ``all`` (default, the study): every critique that parsed enters memory (as ``--on-mismatch`` allows);
- ``instruction``: a critique enters only if it carries at least one instruction that constrains a future
  decision: a sentence of its reasons that is an imperative ("Check each condition ..."), says what to do with a
  directive ("you should ...", "always ...", "never ...", "make sure ...") or sets a condition on a decision
  ("if the item is a city, put it first"). A note that only states an outcome ("the answer is correct", "the
  correct answer is 2") or a quantity is rejected, and written with its reason to ``memory/rejected.jsonl``
  (the critique stage's, or a stream's write-back, with the step).

The check reads the critique's ``local_reason`` and ``global_reason`` with fixed word lists (``DIRECTIVE_VERBS``,
``DIRECTIVES``, ``CONDITIONS``), no model call, so the same note is always admitted or rejected alike.
"""

from __future__ import annotations

import re

from critique.base import rundir
from critique.base.config import ADMISSIONS

ALL, INSTRUCTION = ADMISSIONS
REJECTED = "rejected.jsonl"  # memory/: the critiques the admission policy kept out, with why

# verbs that begin an imperative sentence of advice, in their base form
DIRECTIVE_VERBS = frozenset("""
apply avoid answer ask assume begin check choose compare consider count decide determine discard distinguish do
double-check eliminate ensure evaluate examine exclude favor favour find focus follow give identify ignore include
keep list look match note notice order pay pick place prefer prioritize prioritise put rank read recall reconsider
re-read reread remember rule select sort start take test treat trust try use verify weigh work
""".split())
# phrases that make a sentence a directive wherever they stand
DIRECTIVES = ("should", "must", "need to", "needs to", "have to", "has to", "make sure", "be sure", "always",
              "never", "do not", "don't", "it is important to", "it is best to", "remember to", "be careful")
CONDITIONS = ("if", "when", "whenever", "unless", "once", "before", "after")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_LEAD = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s*|^(?:first|then|next|finally|also|so|therefore|thus)\b,?\s*",
                   re.IGNORECASE)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s.strip()]


def _words(sentence: str) -> list[str]:
    return re.findall(r"[a-z][a-z'-]*", sentence.lower())


def _imperative(sentence: str) -> bool:
    """The sentence (or a clause of it after a comma) begins with a directive verb."""
    clauses = [_LEAD.sub("", c.strip()) for c in sentence.split(",")]
    return any((_words(c) or [""])[0] in DIRECTIVE_VERBS for c in clauses if c)


def _directive(sentence: str) -> bool:
    padded = " " + " ".join(_words(sentence)) + " "
    return any(f" {phrase} " in padded for phrase in DIRECTIVES)


def instruction(sentence: str) -> bool:
    """An imperative, a directive, or a condition that leads to one."""
    lead = _LEAD.sub("", sentence.strip())
    words = _words(lead)
    if not words:
        return False
    if words[0] in DIRECTIVE_VERBS or _directive(lead):
        return True
    return words[0] in CONDITIONS and _imperative(lead)


def instructions(entry: dict) -> list[str]:
    """The sentences of the entry's critique reasons that are instructions."""
    critique = entry.get("critique") or {}
    text = "\n".join(str(critique.get(k) or "") for k in ("local_reason", "global_reason"))
    return [s for s in sentences(text) if instruction(s)]


def rejection(policy: str, entry: dict) -> str | None:
    """Why ``policy`` keeps ``entry`` out of memory, or None when it admits it."""
    if policy == ALL or instructions(entry):
        return None
    return "no instruction: its reasons state an outcome or a fact, no imperative, directive or condition"


def admitted(policy: str, entries: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the entries ``policy`` admits, the rejected ones as records with ``reason``), each in order."""
    kept, rejected = [], []
    for entry in entries:
        reason = rejection(policy, entry)
        if reason is None:
            kept.append(entry)
        else:
            rejected.append({**entry, "reason": reason})
    return kept, rejected


def save(folder, rejected: list[dict]) -> None:
    """memory/rejected.jsonl, written whole (a resumed or replayed stage writes the same records again)."""
    rundir.write_jsonl_atomic(folder / REJECTED, rejected)
