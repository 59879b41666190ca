"""Reading an answer out of a model's reply, and the parse-failure policy.

The policy: a reply that names no option of the answer space counts as wrong, and the
recorded answer is a seeded random *wrong* option, so malformed output never inflates
accuracy. Parsing never raises.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass

from critique.base.reply_bounds import FIELD_CHARS, MAX_ADVICE_LINES
from critique.base.assertion import asserted_option  # the one definition, re-exported


@dataclass(frozen=True)
class Parsed:
    answer: str
    parse_failed: bool


def _normalise(value: str, answer_space: list[str]) -> str | None:
    """The option ``value`` names, or None: read as the assertion check reads a critique's answer
    (critique.base.assertion.asserted_option: one normalisation and one negation rule, so a reply and a
    critique that say the same thing name the same option; "not A" and "A is wrong" name none)."""
    return asserted_option(value, answer_space)


def json_object(text: str) -> dict | None:
    """The JSON object a reply holds (the whole text, else its outermost braces), or None."""
    try:
        value = json.loads(text, strict=False)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        start, end = (text or "").find("{"), (text or "").rfind("}")  # the outermost braces, in linear time
        if start < 0 or end < start:
            return None
        try:
            value = json.loads(text[start:end + 1], strict=False)
        except (json.JSONDecodeError, ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def extract_answer(text: str | None, answer_space: list[str]) -> str | None:
    """The option the reply names, or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text[:100_000]
    obj = json_object(text)
    if obj is not None and "answer" in obj and isinstance(obj["answer"], (str, int)) \
            and not isinstance(obj["answer"], bool):
        return _normalise(str(obj["answer"]), answer_space)
    if obj is not None:
        return None
    return _normalise(text, answer_space)


def wrong_answer(gold: str, answer_space: list[str], *seed_parts: object) -> str:
    """A random option other than ``gold``, seeded by ``seed_parts``."""
    key = "\0".join(str(p) for p in seed_parts).encode()
    rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
    return rng.choice([a for a in answer_space if a != gold])


def parse_answer(text: str | None, answer_space: list[str], gold: str, *seed_parts: object) -> Parsed:
    answer = extract_answer(text, answer_space)
    if answer is None:
        return Parsed(wrong_answer(gold, answer_space, *seed_parts), True)
    return Parsed(answer, False)


CRITIQUE_KEYS = ("correct_answer", "local_reason", "global_reason")

# FIELD_CHARS (characters at most in each field of a reply) and MAX_ADVICE_LINES (pieces of advice in a summary)
# are defined in critique.base.reply_bounds, where the analysis reads them too. Only the embedded model is held to
# them (its grammar; critique.llm.bounds): other providers get the schemas without length keywords.

CRITIQUE_SCHEMA = {
    "type": "object",
    "properties": {key: {"type": "string", "maxLength": FIELD_CHARS[key]} for key in CRITIQUE_KEYS},
    "required": list(CRITIQUE_KEYS),
    "additionalProperties": False,
}

SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"advice": {"type": "array", "maxItems": MAX_ADVICE_LINES,
                              "items": {"type": "string", "maxLength": FIELD_CHARS["advice_line"]}}},
    "required": ["advice"],
    "additionalProperties": False,
}


# --advice-sources cited: each piece of advice an object with its line and the numbers (of the questions, or of
# the lines merged) it rests on; how many numbers a piece may name is checked by parse_cited_advice.
CITED_SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"advice": {"type": "array", "maxItems": MAX_ADVICE_LINES, "items": {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": FIELD_CHARS["advice_line"]},
                       "sources": {"type": "array", "items": {"type": "integer"}}},
        "required": ["text", "sources"],
        "additionalProperties": False}}},
    "required": ["advice"],
    "additionalProperties": False,
}


def cite_schema(answer_schema: dict, examples: int) -> dict:
    """``answer_schema`` that also asks which of the prompt's ``examples`` (numbered from 1) the answer used:
    ``used_examples``, a list of their numbers (critique credit --cite)."""
    used = {"type": "array", "maxItems": max(1, examples), "items": {"type": "integer"}}  # range: parse_cited
    schema = {**answer_schema, "properties": {**answer_schema["properties"], "used_examples": used}}
    return {**schema, "required": [*answer_schema.get("required", []), "used_examples"]}


def parse_cited(text: str | None, examples: int) -> list[int] | None:
    """The example numbers (1..``examples``) a --cite reply says it used, in order and without repeats;
    None when the reply has no valid ``used_examples`` list (not a citation of none)."""
    obj = json_object(text or "")
    used = obj.get("used_examples") if obj is not None else None
    if not isinstance(used, list):
        return None
    numbers = [n for n in used if isinstance(n, int) and not isinstance(n, bool)]
    if len(numbers) != len(used) or any(not 1 <= n <= examples for n in numbers):
        return None
    return list(dict.fromkeys(numbers))


def parse_critique(text: str | None) -> dict | None:
    """The three critique fields as strings, or None when the reply is not such an object."""
    obj = json_object(text or "")
    if obj is None or not all(isinstance(obj.get(k), str) for k in CRITIQUE_KEYS):
        return None
    return {k: obj[k].strip() for k in CRITIQUE_KEYS}


# The self critic (--critic self, no label): its verdict on the answer and the answer it believes,
# before the critique's three fields (critique.engine.memory.critic).
VERDICTS = ("right", "wrong")
SELF_KEYS = ("verdict", "believed_answer")


def self_critique_schema(answer_space: list[str]) -> dict:
    """The self critic's reply: verdict, believed answer (an option), then the three critique fields."""
    return {"type": "object",
            "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)},
                           "believed_answer": {"type": "string", "enum": list(answer_space)},
                           **CRITIQUE_SCHEMA["properties"]},
            "required": [*SELF_KEYS, *CRITIQUE_KEYS], "additionalProperties": False}


def parse_self_critique(text: str | None, answer_space: list[str]) -> tuple[dict, str, str | None] | None:
    """(the three critique fields, the verdict "right" or "wrong", the believed option or None when it
    names none) of a self critic's reply; None when the reply has no verdict or no critique."""
    critique = parse_critique(text)
    obj = json_object(text or "")
    verdict = obj.get("verdict") if obj is not None else None
    verdict = verdict.strip().lower() if isinstance(verdict, str) else None
    if critique is None or verdict not in VERDICTS:
        return None
    believed = obj.get("believed_answer")
    believed = _normalise(str(believed), answer_space) if isinstance(believed, (str, int)) \
        and not isinstance(believed, bool) else None
    return critique, verdict, believed


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def _advice_lines(values) -> list[str]:
    lines = []
    for value in values:
        for line in str(value).splitlines():
            line = _BULLET.sub("", line).strip()
            if line:
                lines.append(line)
    return lines


def parse_advice(text: str | None) -> list[str]:
    """The pieces of advice of a summary reply, one line each, without their bullets: the ``advice``
    list (or text, as older replies held it), or the lines of a reply that is not JSON; [] when none."""
    obj = json_object(text or "")
    if obj is not None:
        advice = obj.get("advice")
        if isinstance(advice, str):
            return _advice_lines([advice])
        return _advice_lines(a for a in advice if isinstance(a, str)) if isinstance(advice, list) else []
    return _advice_lines([text]) if isinstance(text, str) else []


def parse_cited_advice(text: str | None) -> list[tuple[str, list[int]]]:
    """The pieces of advice of a --advice-sources cited reply, each (line, the numbers it names in order and
    without repeats, whatever their range: the caller checks them against its prompt). A piece given as plain
    text, or without a list of whole numbers, names none ([]); a reply that is not JSON is read as
    parse_advice reads it, every line naming none."""
    obj = json_object(text or "")
    advice = obj.get("advice") if obj is not None else None
    if not isinstance(advice, list):
        return [(line, []) for line in parse_advice(text)]
    pieces = []
    for piece in advice:
        line, numbers = (piece.get("text"), piece.get("sources")) if isinstance(piece, dict) else (piece, None)
        if not isinstance(numbers, list):
            numbers = []
        numbers = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool)]
        pieces += [(one, list(dict.fromkeys(numbers))) for one in _advice_lines([line] if line else [])]
    return pieces


def advice_text(lines: list[str]) -> str | None:
    """The advice as the prompts show it: one "- " line per piece; None when there is none."""
    return "\n".join(f"- {line}" for line in lines) or None


def assertion_mismatch(critique: dict, gold: str, answer_space: list[str]) -> bool:
    """True unless the critic's ``correct_answer`` names the gold label as the answer (strictly:
    critique.base.assertion.asserted_option; a stray option in a sentence names nothing)."""
    return asserted_option(critique.get("correct_answer"), answer_space) != gold
