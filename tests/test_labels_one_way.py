"""Labels are read one way (critique.base.labels, critique.base.assertion): the answer parser and the
critique's assertion check fold a text alike (invisible characters dropped, NFKC, case folded), deny an
option by one negation rule, and so name the same option for every text; a dataset whose labels differ only
by invisible characters, hold a line break or run past MAX_LABEL_CHARS is refused when loaded."""

import json

import pytest
from hypothesis import given, strategies as st

from critique.base import labels
from critique.base.assertion import asserted_option
from critique.datasets.splits import DatasetError, load_dataset
from critique.engine import parsing

AB = ["A", "B", "C"]
DIGITS = ["1", "2", "3"]


@pytest.mark.parametrize("text, space, expected", [
    ("\u200fA", AB, "A"),  # a right-to-left mark before the option
    ("A\u200b", AB, "A"), ("A\u00ad", AB, "A"), ("B\ufe0f", AB, "B"),
    ("isn't A", AB, None), ("isn\u2019t A", AB, None), ("isnt A", AB, None),
    ("A is wrong", AB, None), ("A is incorrect", AB, None), ("A is not right", AB, None),
    ("no A", AB, None), ("never A", AB, None), ("neither A nor B", AB, None), ("Not option B", AB, None),
    ("A, not B", AB, "A"), ("A, not B.", AB, "A"), ("not A, B", AB, "B"),
    ("isn't 1", DIGITS, None),
    ("The correct answer is \u200f2.", DIGITS, "2"),
    ("The correct answer is 2, not 3.", DIGITS, "2"),
    ("The correct answer isn't 2", DIGITS, None),
    ("Answer: STRASSE", ["stra\u00dfe", "weg"], "stra\u00dfe"),  # ß case folds to ss
    ("The answer is STRASSE.", ["stra\u00dfe", "weg"], "stra\u00dfe"),
    ("Option \u0130", ["i\u0307", "x"], "i\u0307"),  # İ case folds to i with a dot above
    ("The answer is \u0130", ["\u0130", "x"], "\u0130"),
    ("b) the second one", AB, "B"), ("paper A", AB, "A"), ("the answer is a comedy", AB, None),
])
def test_the_parser_and_the_assertion_check_name_the_same_option(text, space, expected):
    assert asserted_option(text, space) == expected
    assert parsing.extract_answer(text, space) == expected
    assert parsing.extract_answer(json.dumps({"answer": text}), space) == expected
    for gold in space:
        assert parsing.assertion_mismatch({"correct_answer": text}, gold, space) == (expected != gold)


def test_a_correct_critique_behind_a_right_to_left_mark_is_no_mismatch():
    critique = {"correct_answer": "The correct answer is \u200f2.", "local_reason": "r", "global_reason": "g"}
    assert not parsing.assertion_mismatch(critique, "2", DIGITS)
    assert parsing.assertion_mismatch(critique, "1", DIGITS)


def test_a_model_that_always_answers_isnt_1_fails_to_parse_and_scores_nothing():
    parsed = [parsing.parse_answer("isn't 1", DIGITS, gold, "item", gold) for gold in DIGITS]
    assert all(p.parse_failed for p in parsed)
    assert not any(p.answer == gold for p, gold in zip(parsed, DIGITS))


WORDS = ["A", "B", "a", "not", "no", "isn't", "isn\u2019t", "never", "nor", "is", "wrong", "answer", "the",
         "correct", "Option", "\u200f", "\u200b", "\u00ad", "\ufe0f", ",", ".", ":", "(", ")", "or"]


@given(st.lists(st.sampled_from(WORDS), max_size=8), st.sampled_from([" ", ""]))
def test_for_every_text_the_parser_reads_what_the_assertion_check_reads(words, joint):
    text = joint.join(words)
    assert parsing.extract_answer(text, AB) == asserted_option(text, AB)


@given(st.sampled_from(AB), st.lists(st.sampled_from("\u200b\u200f\u00ad\ufe0f\u2060\ufeff"), max_size=3),
       st.integers(0, 1))
def test_invisible_characters_change_no_label(option, marks, where):
    text = "".join(marks) + option if where else option + "".join(marks)
    assert labels.fold(text) == labels.fold(option)
    assert asserted_option(text, AB) == parsing.extract_answer(text, AB) == option


@pytest.mark.parametrize("word", sorted(labels.NEGATIONS))
def test_every_negation_word_denies_the_option_after_it(word):
    for option in AB:
        assert asserted_option(f"{word} {option}", AB) is None
        assert parsing.extract_answer(f"{word} {option}", AB) is None


def _card(folder, space):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps({"name": "t", "task": "Pick one.", "answer_space": space}))
    for split, question in (("train", "q1?"), ("test", "q2?")):
        (folder / f"{split}.jsonl").write_text(json.dumps({"id": split, "question": question,
                                                           "answer": space[0]}) + "\n")
    return folder


@pytest.mark.parametrize("space, named", [
    (["\u2764", "\u2764\ufe0f", "x"], ["'\u2764'", "'\u2764\ufe0f'"]),  # a heart with and without emoji style
    (["yes", "ye\u200bs", "no"], ["'yes'", "'ye\\u200bs'"]),  # a zero-width space
    (["coop", "co\u00adop", "no"], ["'coop'", "'co\\xadop'"]),  # a soft hyphen
    (["A\u200f", "A", "B"], ["'A\\u200f'", "'A'"]),  # a right-to-left mark
])
def test_labels_that_differ_only_by_invisible_characters_are_refused_naming_both(tmp_path, space, named):
    with pytest.raises(DatasetError) as caught:
        load_dataset(_card(tmp_path / "d", space))
    message = str(caught.value)
    assert "dataset.json:1:" in message and "cannot be told apart" in message
    assert all(label in message for label in named), message


@pytest.mark.parametrize("label, why", [
    ("two\nlines", "line break"), ("two\rlines", "line break"), ("two\u2028lines", "line break"),
    ("x" * 5000, "5000 characters long"), ("x" * (labels.MAX_LABEL_CHARS + 1), "more than"),
    ("\u200b", "nothing visible"),
])
def test_a_label_with_a_line_break_too_long_or_invisible_is_refused(tmp_path, label, why):
    with pytest.raises(DatasetError, match=why) as caught:
        load_dataset(_card(tmp_path / "d", ["ok", label]))
    assert "dataset.json:1:" in str(caught.value)


def test_a_label_of_the_longest_length_still_loads(tmp_path):
    space = ["x" * labels.MAX_LABEL_CHARS, "y"]
    assert load_dataset(_card(tmp_path / "d", space)).card.answer_space == space
