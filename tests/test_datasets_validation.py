"""The split format's validation: every problem names the file, the line and the problem."""

import json

import pytest

from critique.datasets.splits import (DatasetCard, DatasetError, Item, dataset_files, files_checksum, load_dataset,
                                      write_dataset)


def _write(folder, card: dict, splits: dict[str, list]):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps(card))
    for name, lines in splits.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("".join(json.dumps(x) + "\n" for x in lines))


CARD = {"name": "t", "task": "answer", "answer_space": ["yes", "no"]}
GOOD = [{"id": "a", "question": "q1?", "answer": "yes"}, {"id": "b", "question": "q2?", "answer": "no"}]


@pytest.mark.parametrize("bad, message", [
    ({"id": "c", "answer": "yes"}, "test.jsonl:2: missing field question"),
    ({"id": "c", "question": "q9?", "answer": "maybe"}, "test.jsonl:2: label 'maybe' is not in the answer space"),
    ({"id": "x", "question": "q8?", "answer": "no"}, "test.jsonl:2: duplicate id 'x'"),
    ({"id": "c", "question": "q1?", "answer": "no"}, "test.jsonl:2: test item 'c' overlaps the train split"),
])
def test_bad_lines(tmp_path, bad, message):
    _write(tmp_path, CARD, {"train.jsonl": GOOD, "test.jsonl": [{"id": "x", "question": "q7?", "answer": "no"}, bad]})
    with pytest.raises(DatasetError, match=message):
        load_dataset(tmp_path)


def test_preference_user_folder_missing(tmp_path):
    card = dict(CARD, kind="preference", users=["u1", "u2"])
    _write(tmp_path, card, {"u1/train.jsonl": GOOD, "u1/test.jsonl": [{"id": "c", "question": "q3?", "answer": "no"}]})
    with pytest.raises(DatasetError, match=r"u2/train.jsonl: split file is missing"):
        load_dataset(tmp_path)


def test_write_dataset_refuses_overlap_and_keeps_the_old_copy(tmp_path):
    card = DatasetCard("t", "answer", ["yes", "no"])
    first = write_dataset(tmp_path / "t", card, [Item("a", "q1?", "yes")], [Item("b", "q2?", "no")])
    with pytest.raises(DatasetError, match=r"test.jsonl:1: test item 'a' overlaps"):
        write_dataset(tmp_path / "t", card, [Item("a", "q1?", "yes")], [Item("a", "q3?", "no")])
    assert load_dataset(tmp_path / "t").checksum == first.checksum
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]  # no temporary folder left behind


def test_the_checksum_of_files_in_memory_is_the_written_folders(tmp_path):
    card = DatasetCard("p", "answer", ["yes", "no"], kind="preference")
    train = [Item("a", "q1?", "yes", user="u2"), Item("b", "q\u00e9?", "no", user="u10")]
    test = [Item("c", "q3?", "no", user="u2"), Item("d", "q4?", "yes", user="u10")]
    files = dataset_files(tmp_path / "p", DatasetCard("p", "answer", ["yes", "no"], kind="preference"), train, test)
    assert sorted(files) == ["dataset.json", "u10/test.jsonl", "u10/train.jsonl", "u2/test.jsonl", "u2/train.jsonl"]
    assert files_checksum(files) == write_dataset(tmp_path / "p", card, train, test).checksum
