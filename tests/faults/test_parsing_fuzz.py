"""Malformed model output, fuzzed: parsing never raises, and the parse-failure policy holds
(a reply that names no option counts as wrong, with a seeded random *wrong* option recorded)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from critique.engine import agents, parsing
from critique.llm.client import LLMResult

SPACES = [["1", "2", "3", "4"], ["A", "B"], ["yes", "no"]]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)
answers = st.one_of(json_values, st.sampled_from(["1", "2", "3", "4", "0", "5", "7", "-1", "A", "B", "C", "yes", "no",
                                                  "maybe", "Option 2", "paper B", " 3. ", "2 or 3", "", "１"]),
                    st.integers(-5, 10))


@st.composite
def near_json(draw) -> str:
    """A JSON reply, then maybe broken: cut, wrapped in prose or a code fence, or with a character flipped."""
    obj = draw(st.dictionaries(st.sampled_from(["answer", "Answer", "correct_answer", "local_reason",
                                                "global_reason", "advice", "reasoning"]),
                               answers, max_size=4))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    how = draw(st.sampled_from(["as is", "cut", "prose", "fence", "flip", "twice"]))
    if how == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "prose":
        text = draw(st.text(max_size=40)) + text + draw(st.text(max_size=40))
    elif how == "fence":
        text = f"```json\n{text}\n```"
    elif how == "flip" and text:
        i = draw(st.integers(0, len(text) - 1))
        text = text[:i] + draw(st.characters()) + text[i + 1:]
    elif how == "twice":
        text = text + "\n" + text[::-1]
    return text


giant = st.builds(lambda chunk, n: chunk * n, st.text(min_size=1, max_size=40), st.integers(1_000, 40_000)).map(
    lambda s: s[:40_000])
replies = st.one_of(st.none(), st.text(), near_json(), giant, st.binary(max_size=200).map(
    lambda b: b.decode("utf-8", errors="replace")))


def check_answer(text, space: list[str], gold: str, finish_reason: str | None) -> None:
    found = parsing.extract_answer(text, space)
    assert found is None or found in space
    parsed = parsing.parse_answer(text, space, gold, "u", "item-1", "zero_shot")
    assert parsed.answer in space and parsed.parse_failed == (found is None)
    if parsed.parse_failed:
        assert parsed.answer != gold
        assert parsed == parsing.parse_answer(text, space, gold, "u", "item-1", "zero_shot")  # seeded
    else:
        assert parsed.answer == found
    item = SimpleNamespace(id="item-1", user="u", answer=gold)
    record = agents.answer_record(LLMResult(text, finish_reason=finish_reason), item, space, "zero_shot")
    assert record["correct"] == (not parsed.parse_failed and finish_reason != "length" and parsed.answer == gold)
    assert record["timeout"] == (finish_reason == "length")


@FUZZ
@given(replies, st.sampled_from(SPACES), st.data(), st.sampled_from(["stop", "length", None]))
def test_any_reply_parses_without_raising_and_a_failure_is_never_right(text, space, data, finish_reason):
    check_answer(text, space, data.draw(st.sampled_from(space)), finish_reason)
    critique = parsing.parse_critique(text)
    assert critique is None or (set(critique) == set(parsing.CRITIQUE_KEYS)
                                and all(isinstance(v, str) for v in critique.values()))
    if critique is not None:
        assert isinstance(parsing.assertion_mismatch(critique, space[0], space), bool)
    advice = parsing.parse_advice(text)
    assert isinstance(advice, list) and all(isinstance(line, str) and line.strip() == line and line
                                            for line in advice)


@FUZZ
@given(answers, st.sampled_from(SPACES), st.data())
def test_an_answer_outside_the_options_is_a_parse_failure_and_counts_as_wrong(value, space, data):
    gold = data.draw(st.sampled_from(space))
    text = json.dumps({"answer": value})
    parsed = parsing.parse_answer(text, space, gold, "seed")
    exact = isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip() in space
    if exact:  # an option, right or wrong, is taken as given
        assert not parsed.parse_failed and parsed.answer == str(value).strip()
    if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value).strip() in ("0", "5", "7", "C",
                                                                                               "maybe", ""):
        assert parsed.parse_failed and parsed.answer != gold
    check_answer(text, space, gold, "stop")


def test_a_negative_or_fractional_answer_is_not_option_1():
    for value in ("-1", "1.5", -1):
        assert parsing.parse_answer(json.dumps({"answer": value}), ["1", "2", "3", "4"], "1", "s").parse_failed


@FUZZ
@given(st.sampled_from(SPACES), st.data())
def test_a_wrong_option_is_wrong_and_the_right_one_right(space, data):
    gold, said = data.draw(st.sampled_from(space)), data.draw(st.sampled_from(space))
    item = SimpleNamespace(id="x", user=None, answer=gold)
    record = agents.answer_record(LLMResult(json.dumps({"answer": said}), finish_reason="stop"), item, space, "s")
    assert record["answer"] == said and not record["parse_failed"] and record["correct"] == (said == gold)
    cut = agents.answer_record(LLMResult(json.dumps({"answer": said}), finish_reason="length"), item, space, "s")
    assert cut["timeout"] and not cut["correct"]
