"""One normalisation of labels (critique.base.labels) for the answer parser, the critique's assertion check
and the audit: labels with punctuation or spaces around them can be answered right, the three agree on case,
negation and Unicode forms, and a dataset whose labels cannot be told apart is refused when loaded."""

import json

import pytest

from critique.base.assertion import asserted_option
from critique.base.labels import collisions
from critique.cli import main
from critique.engine.parsing import extract_answer

PUNCTUATED = [["(A)", "(B)", "(C)"], ["1.", "2.", "3."], ['"yes"', '"no"'], ["A ", "B "]]


@pytest.mark.parametrize("space", PUNCTUATED)
def test_a_label_with_punctuation_or_spaces_around_it_is_read_as_itself(space):
    for label in space:
        assert extract_answer(json.dumps({"answer": label}), space) == label
        assert asserted_option(label, space) == label
        assert asserted_option(f"The correct answer is {label.strip()}", space) == label


@pytest.mark.parametrize("text, expected", [
    ("b", "B"), ("(b)", "B"), ("Option b", "B"), ("\uff22", "B"),  # a fullwidth B is B in NFKC
    ("Not A", None), ("not B", None),
])
def test_the_parser_and_the_assertion_check_agree(text, expected):
    space = ["A", "B", "C"]
    assert extract_answer(json.dumps({"answer": text}), space) == expected
    assert asserted_option(text, space) == expected


def test_a_stray_letter_in_a_sentence_still_names_no_option():
    assert asserted_option("the answer is a comedy", ["A", "B"]) is None
    assert asserted_option("There are 3 conditions", ["1", "2", "3"]) is None


def test_labels_that_collide_are_named():
    assert collisions(["A", "a", "(B)", "B", "C"]) == [("A", "a"), ("(B)", "B")]
    assert collisions(["caf\u00e9", "cafe\u0301"]) == [("caf\u00e9", "cafe\u0301")]  # one word, two Unicode forms
    assert collisions(["1", "2", "3"]) == []


def write_dataset(folder, space, answers):
    folder.mkdir(parents=True)
    card = {"name": folder.name, "task": "Pick one.", "answer_space": space}
    (folder / "dataset.json").write_text(json.dumps(card))
    for split in ("train", "test"):
        lines = [json.dumps({"id": f"{split}{n}", "question": f"{split} question {n}?", "answer": a})
                 for n, a in enumerate(answers)]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_a_dataset_whose_labels_collide_is_refused_naming_them(home, fake_llm, capsys):
    data = write_dataset(home / "cased", ["yes", "Yes", "no"], ["yes", "no"])
    assert main(["run", "--dataset", str(data), "--model", "fake/model", "--out", str(home / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "dataset.json:1" in err and "'yes' and 'Yes'" in err and "cannot be told apart" in err
    assert not (home / "run").exists()


def test_a_run_on_parenthesised_labels_scores_the_right_answers_right(home, fake_llm, capsys):
    data = write_dataset(home / "paren", ["(A)", "(B)"], ["(A)", "(B)", "(A)", "(B)"])
    assert main(["run", "--dataset", str(data), "--model", "fake/model", "--strategies", "zero_shot", "--k", "1",
                 "--out", str(home / "run"), "--quiet"]) == 0
    from critique.base import rundir

    tests = [p for p in rundir.read_jsonl(home / "run" / rundir.PREDICTIONS) if p["stage"] == "test"]
    assert tests and not any(p["parse_failed"] for p in tests)  # the fake answers an option of the enum
    assert any(p["correct"] for p in tests)
