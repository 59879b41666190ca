"""Bad input is refused before any call: one line naming the problem (the file and line where
there is one), exit status 2, and nothing written."""

from __future__ import annotations

import json

import pytest

from critique.cli import main
from critique.datasets.rawfiles import read_csv, read_json, read_tsv
from critique.datasets.splits import DatasetError

CARD = {"name": "mine", "task": "Is it so?", "answer_space": ["yes", "no"]}
TRAIN = [{"id": "1", "question": "q1?", "answer": "yes"}, {"id": "2", "question": "q2?", "answer": "no"}]
TEST = [{"id": "3", "question": "q3?", "answer": "no"}]


def folder_of(root, card=CARD, splits=None):
    folder = root / "mydata"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps(card) if isinstance(card, dict) else card)
    for name, lines in (splits or {"train.jsonl": TRAIN, "test.jsonl": TEST}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        data = lines if isinstance(lines, bytes) else "".join(json.dumps(x) + "\n" for x in lines).encode()
        (folder / name).write_bytes(data)
    return folder


def refused(home, fake_llm, capsys, argv, message, out=None):
    out = out or home / "out"
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err, err
    assert len(err.splitlines()) == 1 and err.startswith("critique: error:")
    assert fake_llm.CALLS == [] and not out.exists()
    return err


@pytest.mark.parametrize("args, message", [
    (["--limit", "0"], "--limit must be at least 1, not 0"),
    (["--temperature", "nan"], "--temperature must be a finite number, not nan"),
    (["--temperature", "-1"], "--temperature must be at least 0.0"),
    (["--timeout", "inf"], "--timeout must be a finite number, not inf"),
])
def test_bad_values_of_a_run_are_refused(home, fake_llm, capsys, args, message):
    refused(home, fake_llm, capsys, ["run", "--dataset", "mcr-gen", "--model", "fake/model", *args], message)


@pytest.mark.parametrize("card, message", [
    (dict(CARD, answer_space="yesno"), "answer_space must be a list of labels (strings), not 'yesno'"),
    (dict(CARD, task=None), "task must be a non-empty string, not None"),
    (dict(CARD, task="  "), "task must be a non-empty string"),
    (dict(CARD, answer_space=["yes", 1]), "answer_space must be a list of labels"),
    (dict(CARD, kind="preference", users=["../good"]), "user '../good' is not a valid name"),
    (dict(CARD, kind="preference", users=[".hidden"]), "user '.hidden' is not a valid name"),
    ('["not", "a", "card"]', "a dataset card must be a JSON object"),
])
def test_a_bad_dataset_card_is_refused(home, fake_llm, capsys, card, message):
    folder = folder_of(home, card)
    err = refused(home, fake_llm, capsys, ["run", "--dataset", str(folder), "--model", "fake/model"], message)
    assert f"{folder / 'dataset.json'}:1:" in err


def test_empty_splits_are_refused(home, fake_llm, capsys):
    folder = folder_of(home, splits={"train.jsonl": [], "test.jsonl": TEST})
    refused(home, fake_llm, capsys, ["run", "--dataset", str(folder), "--model", "fake/model"],
            f"{folder / 'train.jsonl'}: the train split is empty")
    folder = folder_of(home / "b", splits={"train.jsonl": TRAIN, "test.jsonl": []})
    refused(home, fake_llm, capsys, ["run", "--dataset", str(folder), "--model", "fake/model"],
            f"{folder}: the test split is empty")


@pytest.mark.parametrize("name", ["train.jsonl", "test.jsonl", "dataset.json"])
def test_a_byte_that_is_not_utf8_names_the_file_and_line(home, fake_llm, capsys, name):
    folder = folder_of(home)
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data.replace(b"q" if name != "dataset.json" else b"Is", b"\xff", 1) + b"\n")
    refused(home, fake_llm, capsys, ["run", "--dataset", str(folder), "--model", "fake/model"],
            f"{folder / name}:1: not utf-8 text (byte 0xff")


def test_a_raw_file_that_is_not_utf8_names_the_file_and_line(tmp_path):
    csv_file, tsv_file, json_file = tmp_path / "a.csv", tmp_path / "a.tsv", tmp_path / "a.json"
    csv_file.write_bytes(b"user,item\n1,ok\n2,caf\xe9\n")
    tsv_file.write_bytes(b"user\titem\n1\tok\n2\tcaf\xe9\n")
    json_file.write_bytes(b'{"a":\n "caf\xe9"}\n')
    with pytest.raises(DatasetError, match=r"a.csv:3: not utf-8 text \(byte 0xe9 at column 6\)"):
        list(read_csv(csv_file, ["user", "item"]))
    with pytest.raises(DatasetError, match=r"a.tsv:3: not utf-8 text"):
        list(read_tsv(tsv_file, 2))
    with pytest.raises(DatasetError, match=r"a.json:2: not utf-8 text"):
        read_json(json_file)


def test_a_run_directory_inside_its_dataset_folder_is_refused(home, fake_llm, capsys):
    folder = folder_of(home)
    refused(home, fake_llm, capsys, ["run", "--dataset", str(folder), "--model", "fake/model"],
            "is inside the dataset folder", out=folder / "runs" / "x")


def test_a_study_listing_a_dataset_twice_is_refused(home, fake_llm, capsys):
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen", "mcr-gen"]\nout = "out"\n\n[[models]]\nname = "fake/model"\n')
    assert main(["study", str(study)]) == 2
    err = capsys.readouterr().err.strip()
    assert "datasets: 'mcr-gen' is listed twice" in err and len(err.splitlines()) == 1
    study.write_text(f'datasets = ["mcr-gen", "{home / "elsewhere" / "mcr-gen"}"]\nout = "out"\n\n'
                     '[[models]]\nname = "fake/model"\n')
    assert main(["study", str(study)]) == 2
    assert "would write the same run directories" in capsys.readouterr().err
    assert fake_llm.CALLS == [] and not (home / "out").exists()


def test_predict_on_preference_data_needs_the_user(home, fake_llm):
    from critique import Learner

    learner = Learner("fake/model", task="Which one?", answer_space=["A", "B"], out=home / "pref", progress=False,
                      k=2)
    items = [{"id": f"{u}{n}", "question": f"{u} question {n}?", "answer": "AB"[n % 2], "user": u}
             for u in ("alice", "bob") for n in range(3)]
    learner.fit(items)
    with pytest.raises(ValueError, match="one memory per user: give user="):
        learner.predict("A new question?")
    with pytest.raises(ValueError, match="'carol' is not among them"):
        learner.predict("A new question?", user="carol")
    calls = len(fake_llm.CALLS)
    assert learner.predict("A new question?", user="alice")[0].answer in ("A", "B")
    assert len(fake_llm.CALLS) == calls + 1
