"""Full builds from ../shared/data-raw (skipped when it is absent): counts, disjointness, balance."""

from collections import Counter
from pathlib import Path

import pytest

from critique.cli import main
from critique.datasets.registry import REGISTRY
from critique.datasets.splits import load_dataset

RAW = Path(__file__).resolve().parents[2] / "shared" / "data-raw"
pytestmark = pytest.mark.skipif(not RAW.is_dir(), reason="../shared/data-raw is absent")
UPSTREAM = sorted(n for n, s in REGISTRY.items() if not s.generated)
PREFERENCE = {"steam", "book", "anime", "movie"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    assert main(["datasets", "build", "all", "--raw", str(RAW), "--out", str(out)]) == 0
    return out


def _balanced(items, space):
    counts = Counter(i.answer for i in items)
    return max(counts[a] for a in space) - min(counts[a] for a in space) <= 1


@pytest.mark.parametrize("name", UPSTREAM)
def test_full_build_counts_disjointness_balance(built, name):
    ds = load_dataset(built / name)
    card = ds.card
    assert (len(ds.train), len(ds.test)) == (250, 250)
    assert card.source and card.license and card.version and card.seed == 0 and card.build_command
    assert card.checksums and card.extra["raw_sha256"]
    assert card.to_json()["response_schema"]["properties"]["answer"]["enum"] == card.answer_space
    groups = card.users if name in PREFERENCE else [None]
    assert len(groups) == (10 if name in PREFERENCE else 1)
    for user in groups:
        train = [i for i in ds.train if i.user == user]
        test = [i for i in ds.test if i.user == user]
        if user:
            assert len(train) == len(test) == 25
        assert not {i.id for i in train} & {i.id for i in test}
        assert not {i.question for i in train} & {i.question for i in test}
        if name != "pubmed":  # pubmed keeps upstream's yes/no ratio instead
            assert _balanced(train, card.answer_space) and _balanced(test, card.answer_space)
    if name == "pubmed":
        for split in (ds.train, ds.test):
            assert set(Counter(i.answer for i in split)) == {"yes", "no"}
    if name == "nfcorpus-grouped":
        assert not {i.meta["article"] for i in ds.train} & {i.meta["article"] for i in ds.test}
    if name == "book":
        assert "not Goodreads" in card.version


def test_rebuild_is_byte_identical(built, tmp_path):
    for name in UPSTREAM:
        again = REGISTRY[name].build(tmp_path / name, seed=0, raw=RAW / REGISTRY[name].raw_subdir)
        assert again.checksum == load_dataset(built / name).checksum, name


def test_list_shows_sizes(built, capsys):
    assert main(["datasets", "list", "--out", str(built)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["pubmed"].endswith("yes    250/250")
    assert lines["movie"].endswith("yes    10 users, 250/250")
