from hypothesis import given, strategies as st

from critique.engine import parsing

SPACE = ["1", "2", "3", "4"]


def test_json_answer():
    assert parsing.extract_answer('{"answer": "3"}', SPACE) == "3"
    assert parsing.extract_answer('{"answer": 2}', SPACE) == "2"
    assert parsing.extract_answer('Sure! {"answer": "Option 4"} done', SPACE) == "4"
    assert parsing.extract_answer('{"answer": "paper A"}', ["A", "B"]) == "A"
    assert parsing.extract_answer('{"answer": "Yes"}', ["yes", "no"]) == "yes"


def test_plain_text_answer():
    assert parsing.extract_answer("2", SPACE) == "2"
    assert parsing.extract_answer("2. karate, rowing", SPACE) == "2"


def test_unparseable_replies():
    for text in [None, "", "   ", '{"answer": "7"}', '{"answer": true}', '{"other": "1"}', "[1, 2]",
                 '{"answer": "1 or 2"}', "I think it is 1 or maybe 2 or 3, hard to say"]:
        assert parsing.extract_answer(text, SPACE) is None, text


def test_parse_failure_policy_gives_a_seeded_wrong_answer():
    first = parsing.parse_answer("garbage", SPACE, "2", "item-1", "EP_CRIT")
    again = parsing.parse_answer("garbage", SPACE, "2", "item-1", "EP_CRIT")
    assert first.parse_failed and first.answer != "2" and first == again
    answers = {parsing.parse_answer("x", SPACE, "2", f"item-{i}").answer for i in range(50)}
    assert answers == {"1", "3", "4"}  # random over the wrong options, never the gold one


@given(st.text(max_size=300))
def test_parsing_never_raises_and_never_returns_outside_the_space(text):
    parsed = parsing.parse_answer(text, SPACE, "1", "seed")
    assert parsed.answer in SPACE
    assert parsed.parse_failed or parsed.answer == parsing.extract_answer(text, SPACE)


def test_critique_and_assertion_check():
    good = parsing.parse_critique('{"correct_answer": "The correct answer is 2; the answer 3 was wrong.",'
                                  ' "local_reason": "r", "global_reason": "g"}')
    assert good["local_reason"] == "r"
    assert not parsing.assertion_mismatch(good, "2", SPACE)
    bad = dict(good, correct_answer="The right option is 3.")
    assert parsing.assertion_mismatch(bad, "2", SPACE)
    assert parsing.assertion_mismatch(dict(good, correct_answer="It was right."), "2", SPACE)
    assert parsing.parse_critique('{"correct_answer": "x"}') is None
    assert parsing.parse_critique("not json") is None


def test_advice():
    assert parsing.parse_advice('{"advice": ["a", "- b", "3. c"]}') == ["a", "b", "c"]
    assert parsing.parse_advice('{"advice": "- a\\n- b"}') == ["a", "b"]  # a text, as older replies held it
    assert parsing.parse_advice("- plain bullets\n\n* more") == ["plain bullets", "more"]
    assert parsing.parse_advice('{"advice": ""}') == [] and parsing.parse_advice('{"advice": [1, " "]}') == []
    assert parsing.parse_advice(None) == [] and parsing.parse_advice('{"other": 1}') == []
    assert parsing.advice_text(["a", "b"]) == "- a\n- b" and parsing.advice_text([]) is None


def test_raw_newlines_inside_json_strings_are_accepted():
    text = '{"correct_answer": "1", "local_reason": "a\nb", "global_reason": "c"}'
    assert parsing.parse_critique(text)["local_reason"] == "a\nb"
