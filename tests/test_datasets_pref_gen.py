"""pref-gen: the committed copy regenerates byte for byte; rules, noise and balance hold."""

from collections import Counter
from pathlib import Path

import pytest

from critique.datasets import pref_gen
from critique.datasets.splits import load_dataset

COMMITTED = Path(__file__).resolve().parent.parent / "datasets" / "pref-gen"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return pref_gen.build(tmp_path_factory.mktemp("gen") / "pref-gen")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_committed_copy_regenerates_byte_identical(built):
    assert COMMITTED.is_dir(), "datasets/pref-gen is committed with the default seed"
    assert _files(built.path) == _files(COMMITTED)
    assert load_dataset(COMMITTED).checksum == built.checksum


def test_another_seed_gives_other_data(tmp_path, built):
    assert pref_gen.build(tmp_path / "pref-gen", seed=1).checksum != built.checksum


def test_users_rules_noise_and_balance(built):
    card = built.card
    assert card.kind == "preference" and len(card.users) == len(pref_gen.USERS)
    for user, (complexity, noise) in zip(card.users, pref_gen.USERS):
        stated = card.extra["users"][user]
        assert (stated["complexity"], stated["noise"]) == (complexity, noise)
        assert len(stated["tests"]) == complexity and stated["rule"].startswith("Prefers")
        rule = pref_gen.Rule(tuple(pref_gen.Test(**{**t, "values": tuple(t["values"])}) for t in stated["tests"]))
        assert rule.text() == stated["rule"]
        flips = {}
        for split in (built.train, built.test):
            items = [i for i in split if i.user == user]
            assert len(items) == pref_gen.PER_USER // 2
            flips[split is built.train] = sum(i.meta["flipped"] for i in items)
            counts = Counter(i.answer for i in items)
            assert abs(counts["A"] - counts["B"]) <= 1
            for item in items:
                scores = item.meta["scores"]
                assert scores["a"] != scores["b"]
                preferred = "A" if scores["a"] > scores["b"] else "B"
                assert item.meta["rule_prefers"] == preferred
                assert (item.answer != preferred) == item.meta["flipped"]
                assert user in item.question and "Prefers" not in item.question  # the rule is hidden
        assert flips[True] + flips[False] == noise * pref_gen.PER_USER  # the stated rate, exactly
        assert abs(flips[True] - flips[False]) <= 1
        assert stated["flipped"] == {"train": flips[True], "test": flips[False]}


def test_rule_is_lexicographic():
    genre = pref_gen.Test("genre", ("comedy",))
    short = pref_gen.Test("minutes", threshold=100, above=False)
    rule = pref_gen.Rule((genre, short))
    film = lambda g, m: pref_gen.Film("f", "t", g, 2000, m, "light", 10)  # noqa: E731
    assert rule.score(film("comedy", 150)) > rule.score(film("drama", 90)) > rule.score(film("drama", 150))
    assert rule.text() == "Prefers, most important first: (1) genre is comedy; (2) shorter than 100 minutes."
