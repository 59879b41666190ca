"""`hf:` datasets: local files written by the `datasets` library itself, imported as dataset folders that the
rest of the project reads unchanged (critique.datasets.hub)."""

from __future__ import annotations

import json
import re

import pytest

datasets = pytest.importorskip("datasets")

from critique.cli import main  # noqa: E402
from critique.datasets import hub  # noqa: E402
from critique.datasets.registry import resolve  # noqa: E402
from critique.datasets.splits import DatasetError, load_dataset  # noqa: E402

FEATURES = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"]),
                              "uid": datasets.Value("string"), "who": datasets.Value("string")})


def reviews(n: int = 20, label=lambda i: i % 2) -> "datasets.Dataset":
    rows = {"text": [f"review {i}: it was {'great' if label(i) else 'dull'}" for i in range(n)],
            "label": [label(i) for i in range(n)], "uid": [f"r{i}" for i in range(n)],
            "who": [f"user{i % 2}" for i in range(n)]}
    return datasets.Dataset.from_dict(rows, features=FEATURES)


def test_saved_dataset_dict_keeps_its_splits_and_class_names(tmp_path):
    whole = reviews()
    datasets.DatasetDict({"train": whole.select(range(12)), "test": whole.select(range(12, 20))}).save_to_disk(
        tmp_path / "saved")
    dataset = hub.import_dataset(f"hf:{tmp_path / 'saved'}", tmp_path / "data" / "x")
    assert dataset.card.answer_space == ["neg", "pos"]
    assert (len(dataset.train), len(dataset.test)) == (12, 8)
    assert dataset.train[1].answer == "pos" and dataset.train[1].question == "review 1: it was great"
    assert dataset.test[0].id == "test-0" and dataset.card.seed is None
    assert load_dataset(tmp_path / "data" / "x").checksum == dataset.checksum  # a dataset folder like any other


def test_one_parquet_file_is_split_with_a_seed_and_the_split_repeats(tmp_path):
    reviews().to_parquet(str(tmp_path / "r.parquet"))
    first = hub.import_dataset(f"hf:{tmp_path / 'r.parquet'}", tmp_path / "a", hub.Columns(id="uid"))
    again = hub.import_dataset(f"hf:{tmp_path / 'r.parquet'}", tmp_path / "b", hub.Columns(id="uid"))
    assert [i.id for i in first.test] == [i.id for i in again.test]
    assert (len(first.train), len(first.test)) == (10, 10)
    assert first.card.seed == 0 and first.card.extra["hub"]["splits"]["test_fraction"] == 0.5
    assert {i.id for i in first.train + first.test} == {f"r{i}" for i in range(20)}
    other = hub.import_dataset(f"hf:{tmp_path / 'r.parquet'}", tmp_path / "c", hub.Columns(id="uid", seed=1))
    assert [i.id for i in other.test] != [i.id for i in first.test]


def test_csv_labels_are_its_distinct_values_and_the_user_column_makes_preference_data(tmp_path):
    reviews().to_csv(str(tmp_path / "r.csv"))
    dataset = hub.import_dataset(f"hf:{tmp_path / 'r.csv'}", tmp_path / "d", hub.Columns(user="who"))
    assert dataset.card.answer_space == ["0", "1"]
    assert dataset.card.kind == "preference" and dataset.card.users == ["user0", "user1"]
    assert all(sum(i.user == u for i in dataset.test) == 5 for u in ("user0", "user1"))


def test_a_test_question_seen_in_train_is_left_out_and_counted(tmp_path):
    whole = reviews()
    datasets.DatasetDict({"train": whole.select(range(10)), "test": whole.select(range(5, 15))}).save_to_disk(
        tmp_path / "saved")
    dataset = hub.import_dataset(f"hf:{tmp_path / 'saved'}", tmp_path / "x")
    assert len(dataset.test) == 5
    assert "5 test row(s) left out: the same question is in train" in dataset.card.extra["summary"]


@pytest.mark.parametrize("columns, words", [
    (hub.Columns(question="body"), "no column 'body' for the question"),
    (hub.Columns(user="text"), "split 'train' row 0: column 'text'"),
])
def test_errors_name_the_column_and_the_row_and_write_nothing(tmp_path, columns, words):
    reviews().to_json(str(tmp_path / "r.jsonl"))
    with pytest.raises(DatasetError, match=words):
        hub.import_dataset(f"hf:{tmp_path / 'r.jsonl'}", tmp_path / "out", columns)
    assert not (tmp_path / "out").exists()


def test_an_unlabeled_row_is_named(tmp_path):
    whole = reviews(label=lambda i: -1 if i == 14 else i % 2)
    datasets.DatasetDict({"train": whole.select(range(10)), "test": whole.select(range(10, 20))}).save_to_disk(
        tmp_path / "saved")
    with pytest.raises(DatasetError, match=r"split 'test' row 4: column 'label' \(the label\) holds -1"):
        hub.import_dataset(f"hf:{tmp_path / 'saved'}", tmp_path / "out")


def test_resolve_imports_on_first_use_then_reads_the_folder(tmp_path):
    reviews().to_parquet(str(tmp_path / "r.parquet"))
    source = f"hf:{tmp_path / 'r.parquet'}"
    first = resolve(source, tmp_path / "data")
    assert first.path == tmp_path / "data" / "hf-r.parquet" and first.name == "hf-r.parquet"
    (tmp_path / "r.parquet").unlink()  # the second use reads the dataset folder, not the file
    assert resolve(source, tmp_path / "data").checksum == first.checksum


def test_the_import_command_takes_options_and_a_mapping_file(tmp_path, capsys):
    reviews().to_json(str(tmp_path / "r.jsonl"))
    (tmp_path / "columns.toml").write_text('id = "uid"\ntask = "Is the review positive?"\ntest_fraction = 0.25\n')
    code = main(["datasets", "import", f"hf:{tmp_path / 'r.jsonl'}", "--columns", str(tmp_path / "columns.toml"),
                 "--seed", "3", "--out", str(tmp_path / "data")])
    assert code == 0
    card = json.loads((tmp_path / "data" / "hf-r.jsonl" / "dataset.json").read_text())
    assert card["task"] == "Is the review positive?" and card["seed"] == 3
    assert card["extra"]["hub"]["columns"]["id"] == "uid"
    assert "5 test" in capsys.readouterr().out
    assert card["build_command"].startswith("critique datasets import hf:")


def test_a_mapping_file_with_an_unknown_key_is_refused(tmp_path):
    (tmp_path / "columns.toml").write_text('question = "text"\nquestoin = "x"\n')
    with pytest.raises(DatasetError, match="unknown key questoin"):
        hub.Columns.from_file(tmp_path / "columns.toml")


def test_the_license_comes_from_the_dataset_card(tmp_path):
    folder = tmp_path / "reviews"
    folder.mkdir()
    reviews().to_parquet(str(folder / "train.parquet"))
    (folder / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n# Reviews\n")
    dataset = hub.import_dataset(f"hf:{folder}", tmp_path / "out")
    assert dataset.card.license == "cc-by-4.0" and dataset.card.source == f"hf:{folder}"


def test_a_learner_fits_on_a_hub_dataset(home, fake_llm, tmp_path):
    from critique import Learner

    reviews(8).to_parquet(str(tmp_path / "r.parquet"))
    learner = Learner("fake/model", out=home / "learner", progress=False, k=2)
    learner.fit(f"hf:{tmp_path / 'r.parquet'}")  # its task and answer space are the imported card's
    assert learner.answer_space == ["neg", "pos"] and len(learner.memory.entries) == 4


def test_an_unlabeled_split_the_run_does_not_use_is_not_read(tmp_path):
    whole = reviews()
    hidden = reviews(6, label=lambda i: -1)  # a benchmark's test split, its labels withheld
    datasets.DatasetDict({"train": whole.select(range(12)), "validation": whole.select(range(12, 20)),
                          "test": hidden}).save_to_disk(tmp_path / "saved")
    dataset = hub.import_dataset(f"hf:{tmp_path / 'saved'}", tmp_path / "x", hub.Columns(test_split="validation"))
    assert (len(dataset.train), len(dataset.test)) == (12, 8)


def test_another_source_with_the_same_folder_name_is_refused_not_answered_from(tmp_path, capsys):
    for place, n in (("a", 20), ("b", 12)):
        (tmp_path / place).mkdir()
        reviews(n).to_parquet(str(tmp_path / place / "r.parquet"))
    first = resolve(f"hf:{tmp_path / 'a' / 'r.parquet'}", tmp_path / "data")
    a, b = (re.escape(f"hf:{tmp_path / place / 'r.parquet'}") for place in ("a", "b"))
    with pytest.raises(DatasetError, match=rf"holds the import of {a} .*, not of {b} .*same folder name"):
        resolve(f"hf:{tmp_path / 'b' / 'r.parquet'}", tmp_path / "data")
    code = main(["datasets", "import", f"hf:{tmp_path / 'b' / 'r.parquet'}", "--out", str(tmp_path / "data")])
    assert code != 0 and "holds the import of" in capsys.readouterr().err
    assert load_dataset(tmp_path / "data" / "hf-r.parquet").checksum == first.checksum  # left as it was


def test_a_hub_name_and_a_local_folder_with_its_folder_name_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org--reviews").mkdir()
    reviews().to_parquet(str(tmp_path / "org--reviews" / "train.parquet"))
    assert resolve("hf:./org--reviews", tmp_path / "data").name == "hf-org--reviews"
    with pytest.raises(DatasetError, match=r"not of hf:org/reviews \(hub org/reviews\)"):
        resolve("hf:org/reviews", tmp_path / "data")  # refused before any download


def test_a_changed_local_source_is_imported_again_with_its_columns(tmp_path, capsys):
    reviews().to_json(str(tmp_path / "r.jsonl"))
    assert main(["datasets", "import", f"hf:{tmp_path / 'r.jsonl'}", "--id", "uid", "--seed", "3",
                 "--out", str(tmp_path / "data")]) == 0
    reviews(30).to_json(str(tmp_path / "r.jsonl"))
    dataset = resolve(f"hf:{tmp_path / 'r.jsonl'}", tmp_path / "data")
    assert len(dataset.train) + len(dataset.test) == 30 and dataset.card.seed == 3
    assert {i.id for i in dataset.train + dataset.test} == {f"r{i}" for i in range(30)}
    assert "its files changed since it was imported" in capsys.readouterr().err


def test_an_unchanged_source_is_read_from_its_folder_however_it_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reviews().to_parquet(str(tmp_path / "r.parquet"))
    first = resolve("hf:./r.parquet", tmp_path / "data")
    assert first.card.extra["hub"]["origin"] == {"path": str((tmp_path / "r.parquet").resolve()),
                                                 "digest": hub.files_digest(tmp_path / "r.parquet")}
    monkeypatch.setattr(hub, "load_splits", lambda source: pytest.fail(f"{source} imported again"))
    assert resolve(f"hf:{tmp_path / 'r.parquet'}", tmp_path / "data").checksum == first.checksum


def test_datasets_list_shows_the_imported_datasets_with_their_source(tmp_path, capsys):
    reviews().to_parquet(str(tmp_path / "r.parquet"))
    source = f"hf:{tmp_path / 'r.parquet'}"
    resolve(source, tmp_path / "data")  # imported on first use by --dataset
    assert main(["datasets", "list", "--out", str(tmp_path / "data")]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    row = rows["hf-r.parquet"]
    assert " yes " in row and f"(imported from {source}; use --dataset {source})" in row
