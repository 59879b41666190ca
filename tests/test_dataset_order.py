"""The order of a split decides what --limit keeps (its first N items): a set stored grouped by label is imported
interleaved on request (`--order interleaved`, a preset's `order`), and a run whose limit keeps fewer labels than
it could says so (critique.datasets.order)."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("datasets")

from critique.cli import main  # noqa: E402
from critique.datasets import hub  # noqa: E402
from critique.datasets.columns import Columns  # noqa: E402
from critique.datasets.order import interleaved, narrowed  # noqa: E402
from critique.datasets.splits import DatasetError, Item  # noqa: E402

LABELS = [f"intent_{n:02d}" for n in range(12)]


def grouped_csv(folder, per_label=5):
    """train.csv and test.csv, each sorted by label, as BANKING77's files are."""
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        with open(folder / f"{split}.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "category"])
            for label in LABELS:
                for n in range(per_label):
                    writer.writerow([f"{split} message {n} about {label.replace('_', ' ')}", label])
    return folder


def test_interleaved_order_covers_every_label_early_and_repeats_with_its_seed():
    items = [Item(f"i{label}{n}", f"q {label} {n}", label) for label in "abc" for n in range(4)]
    once = interleaved(items, seed=0)
    assert sorted(i.id for i in once) == sorted(i.id for i in items)  # the same items
    assert [i.answer for i in once[:3]] == ["a", "b", "c"] and [i.answer for i in once[3:6]] == ["a", "b", "c"]
    assert [i.id for i in interleaved(items, seed=0)] == [i.id for i in once]
    assert [i.id for i in interleaved(items, seed=1)] != [i.id for i in once]  # each label's items shuffled
    many = [Item(f"i{label}{n}", f"q {label} {n}", label) for label in "abcdefghij" for n in range(10)]
    assert narrowed(many[:20], many) == (2, 10)  # grouped: 2 labels where a random 20 would hold about 9
    assert narrowed(interleaved(many, 0)[:20], many) is None and narrowed(many[:5], many) is None  # 5: a smoke test


def test_an_import_interleaved_by_label_gives_first_items_that_cover_the_labels(tmp_path):
    source = f"hf:{grouped_csv(tmp_path / 'src')}"
    plain = hub.import_dataset(source, tmp_path / "a", Columns(question="text", label="category"))
    assert len({i.answer for i in plain.test[:12]}) == 3  # the source's order: grouped
    mixed = hub.import_dataset(source, tmp_path / "b", Columns(question="text", label="category",
                                                                 order="interleaved"))
    assert {i.answer for i in mixed.test[:12]} == set(LABELS) and {i.answer for i in mixed.train[:12]} == set(LABELS)
    assert sorted(i.id for i in mixed.test) == sorted(i.id for i in plain.test)
    assert mixed.card.extra["hub"]["columns"]["order"] == "interleaved"
    assert any("interleaved by label with seed 0" in line for line in mixed.card.extra["summary"])
    assert mixed.checksum != plain.checksum  # another order: another dataset


def test_a_mapping_file_with_an_unknown_order_is_refused_naming_it(tmp_path):
    mapping = tmp_path / "columns.toml"
    mapping.write_text('order = "shuffled"\n')
    with pytest.raises(DatasetError, match=r"columns.toml: order must be one of source, interleaved"):
        Columns.from_file(mapping)


def test_a_limit_that_keeps_few_labels_is_said_and_an_interleaved_import_is_not(home, fake_llm, capsys):
    src = grouped_csv(home / "src")
    for order, data in (("source", home / "plain"), ("interleaved", home / "mixed")):
        assert main(["datasets", "import", f"hf:{src}", "--question", "text", "--label", "category",
                     "--order", order, "--out", str(data)]) == 0
        capsys.readouterr()
        assert main(["run", "--dataset", f"hf:{src}", "--data-dir", str(data), "--model", "fake/model",
                     "--limit", "12", "--strategies", "zero_shot", "--out", str(home / f"run-{order}"),
                     "--quiet"]) == 0
        err = capsys.readouterr().err
        said = "--limit 12 keeps the first 12 test items, which hold 3 of the test split's 12 labels" in err
        assert said == (order == "source"), err
