"""mcr builder on small MCRank-style fixture files written here (and on ../shared/data-raw
when present); mcr-gen's item sets."""

import dataclasses
import functools
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from critique.cli import main
from critique.datasets import mcr, mcr_gen
from critique.datasets.registry import REGISTRY
from critique.datasets.splits import DatasetError, load_dataset

RAW = Path(__file__).resolve().parents[2] / "shared" / "data-raw" / "mcr"
ROOT = Path(__file__).resolve().parents[1]

NAMES = ["fig", "kiwi", "mango", "papaya", "apricot", "cherry", "lime", "pear", "quince", "plum",
         "Oslo", "Lima", "Quito", "Accra", "Nairobi", "Porto", "Kyoto", "Perth"]
FRUIT = set(NAMES[:10])
LOW = "Sort the items with a low priority based on their character count from the smallest to largest"


def _reference(items, steps):
    """The gold ordering, computed independently of the module: apply conditions low to high."""
    order = list(items)
    for step in steps:
        order = step(order)
    return order


def _record(rng: random.Random, items=None) -> dict:
    items = list(items) if items else rng.sample(NAMES, 5)
    years = {i: rng.randint(1950, 1995) for i in items}
    target = rng.choice(items)
    low = (LOW, lambda o: sorted(o, key=len))
    medium = rng.choice([
        ('Items in the category "fruit" with a medium priority should appear at the beginning',
         lambda o: [i for i in o if i in FRUIT] + [i for i in o if i not in FRUIT]),
        ("Item that born after 1980 with a medium priority should appear at the beginning",
         lambda o: [i for i in o if years[i] > 1980] + [i for i in o if years[i] <= 1980]),
    ])
    high = rng.choice([
        (f'Item "{target}" with a high priority should be the last from left',
         lambda o: [i for i in o if i != target] + [target]),
        ("First item in the final sorted order with a high priority should appear in the end",
         lambda o: o[1:] + o[:1]),
    ])
    steps = [low, medium, high]
    shown = rng.sample([s[0] for s in steps], 3)
    return {"items": items, "conditions": shown, "label": _reference(items, [s[1] for s in steps]),
            "label_c": [s[0] for s in steps], "years": years, "type": "fixture"}


def write_raw(folder, n=40, seed=1, shared=0):
    """``n`` records; with ``shared``, every record after the first ``shared`` ranks the (shuffled)
    items of one of those, under conditions of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    records = []
    for k in range(n):
        like = records[rng.randrange(shared)]["items"] if shared and k >= shared else None
        records.append(_record(rng, rng.sample(like, len(like)) if like else None))
    lines = [json.dumps(r) for r in records]
    (folder / mcr.RAW_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _options(question: str) -> list[list[str]]:
    lines = question.split("Candidate orderings:\n")[1].splitlines()
    return [line.split(". ", 1)[1].split(", ") for line in lines]


def test_build_gives_four_distinct_options_with_gold_at_the_answer(tmp_path):
    raw = write_raw(tmp_path / "raw")
    ds = mcr.build(tmp_path / "out" / "mcr", seed=3, raw=raw, n_train=12, n_test=8)
    assert (len(ds.train), len(ds.test)) == (12, 8)
    for item in ds.train + ds.test:
        options = _options(item.question)
        gold = item.meta["gold_order"]
        assert len(options) == 4 and len({tuple(o) for o in options}) == 4
        assert options[int(item.answer) - 1] == gold
        for k, option in enumerate(options):
            assert sorted(option) == sorted(gold)
            if k != int(item.answer) - 1:  # never a reordering of equally long items only
                assert [len(x) for x in option] != [len(x) for x in gold]
        assert item.meta["options"][int(item.answer) - 1] == "gold"
    for split in (ds.train, ds.test):
        counts = Counter(i.answer for i in split)
        assert set(counts) == {"1", "2", "3", "4"} and max(counts.values()) - min(counts.values()) <= 1
    assert not {i.id for i in ds.train} & {i.id for i in ds.test}
    assert ds.card.extra["raw_sha256"][mcr.RAW_FILE]


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    raw = write_raw(tmp_path / "raw")
    a = mcr.build(tmp_path / "a" / "mcr", seed=5, raw=raw, n_train=8, n_test=8)
    b = mcr.build(tmp_path / "b" / "mcr", seed=5, raw=raw, n_train=8, n_test=8)
    c = mcr.build(tmp_path / "c" / "mcr", seed=6, raw=raw, n_train=8, n_test=8)
    assert a.checksum == b.checksum != c.checksum
    assert load_dataset(tmp_path / "a" / "mcr").checksum == a.checksum


def test_distractors_come_from_plausible_mistakes():
    rng = random.Random(0)
    record = _record(rng)
    wrong = mcr.distractors(random.Random(1), record)
    assert len(wrong) == 3
    assert all(order != record["label"] for _, order in wrong)
    assert any(why not in ("neighbours swapped", "two items swapped") for why, _ in wrong)


def test_parse_reads_the_conditions_it_can_compute():
    assert mcr.parse(LOW) == mcr.Op("length", (False,))
    move = 'Item "Oslo" with a high priority should be the last from right'
    assert mcr.parse(move) == mcr.Op("move", ("Oslo", False))
    assert mcr.parse("Item that born before 1960 with a medium priority should appear at the end").kind == "born"
    assert mcr.parse('Items in the category "tools" should appear at the end').kind == "opaque"
    order = ["aa", "b", "ccc"]
    assert mcr.apply(mcr.parse(LOW), order, {}) == ["b", "aa", "ccc"]
    assert mcr.apply(mcr.Op("opaque"), order, {}) is None


def test_malformed_record_names_file_and_line_and_writes_nothing(tmp_path):
    raw = write_raw(tmp_path / "raw", n=20)
    path = raw / mcr.RAW_FILE
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    del record["label"]
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out" / "mcr"
    with pytest.raises(DatasetError, match=rf"{mcr.RAW_FILE}:3: missing or empty field 'label'"):
        mcr.build(out, raw=raw, n_train=4, n_test=4)
    assert not out.exists()


def test_label_that_is_not_an_ordering_of_the_items_is_an_error(tmp_path):
    raw = write_raw(tmp_path / "raw", n=10)
    path = raw / mcr.RAW_FILE
    lines = path.read_text().splitlines()
    record = json.loads(lines[4])
    record["label"][0] = "zucchini"
    lines[4] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r":5: label is not an ordering"):
        mcr.build(tmp_path / "out" / "mcr", raw=raw, n_train=4, n_test=4)


def test_bad_json_and_missing_files(tmp_path):
    raw = write_raw(tmp_path / "raw", n=10)
    with (raw / mcr.RAW_FILE).open("a") as handle:
        handle.write("{not json\n")
    with pytest.raises(DatasetError, match=r":11: not valid JSON"):
        mcr.build(tmp_path / "out" / "mcr", raw=raw, n_train=2, n_test=2)
    with pytest.raises(DatasetError, match=r"required raw file is missing"):
        mcr.build(tmp_path / "out" / "mcr", raw=tmp_path)
    with pytest.raises(DatasetError, match=r"pass --raw"):
        mcr.build(tmp_path / "out" / "mcr")


def test_too_few_instances(tmp_path):
    raw = write_raw(tmp_path / "raw", n=6)
    with pytest.raises(DatasetError, match=r"only 6 usable instances, 8 needed"):
        mcr.build(tmp_path / "out" / "mcr", raw=raw, n_train=4, n_test=4)


def _sets(items, records):
    return {frozenset(records[i.meta["line"] - 1]["items"]) for i in items}


def test_records_with_the_same_item_set_never_straddle_the_split(tmp_path):
    raw = write_raw(tmp_path / "raw", n=60, shared=20)
    records = [json.loads(line) for line in (raw / mcr.RAW_FILE).read_text().splitlines()]
    count = Counter(frozenset(r["items"]) for r in records)
    assert max(count.values()) >= 3 and len(count) == 20
    before = []
    for seed in range(4):
        ds = mcr.build(tmp_path / f"s{seed}" / "mcr", seed=seed, raw=raw, n_train=16, n_test=16)
        assert (len(ds.train), len(ds.test)) == (16, 16)
        assert not _sets(ds.train, records) & _sets(ds.test, records)
        sets = ds.card.extra["item_sets"]
        assert sets["records"] == 60 and sets["distinct"] == 20 and sets["straddling"] == 0
        assert sets["shared"] == sum(n > 1 for n in count.values())
        assert sets["records_sharing"] == sum(n for n in count.values() if n > 1)
        assert "builder 2" in ds.card.version and "0 straddle train/test" in ds.card.extra["summary"][0]
        for split in (ds.train, ds.test):
            assert max(Counter(i.answer for i in split).values()) - min(Counter(i.answer for i in split).values()) <= 1
        before.append(sets["straddling_builder1"])
    assert max(before) > 0  # builder 1's record-by-record split let them straddle


def test_split_by_item_set_fills_both_sides_with_whole_groups():
    rng = random.Random(0)
    bases = [_record(rng) for _ in range(12)]
    records = [(n + 1, _record(rng, bases[n % 12]["items"])) for n in range(30)]  # sets of 2 or 3 records
    for seed in range(5):
        train, test = mcr.split_by_item_set(random.Random(seed), records, 7, 9)
        assert (len(train), len(test)) == (7, 9)
        sides = {frozenset(r["items"]) for _, r, _ in train}, {frozenset(r["items"]) for _, r, _ in test}
        assert not sides[0] & sides[1]
        assert all(len(wrong) == 3 for _, _, wrong in train + test)
        assert len({line for line, _, _ in train + test}) == 16


def test_build_prints_the_shared_item_sets(tmp_path, capsys, monkeypatch):
    write_raw(tmp_path / "raw" / "mcr", n=30, shared=12)
    small = dataclasses.replace(REGISTRY["mcr"], build=functools.partial(mcr.build, n_train=8, n_test=8))
    monkeypatch.setitem(REGISTRY, "mcr", small)
    assert main(["datasets", "build", "mcr", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert "built mcr: 8 train / 8 test" in out
    assert "  mcr: " in out and "item sets are shared by" in out and "0 straddle train/test" in out


@pytest.mark.skipif(not RAW.is_dir(), reason="../shared/data-raw is absent")
def test_upstream_item_sets(tmp_path):
    ds = mcr.build(tmp_path / "mcr", seed=0, raw=RAW)
    records = [json.loads(line) for line in (RAW / mcr.RAW_FILE).read_text().splitlines() if line.strip()]
    assert not _sets(ds.train, records) & _sets(ds.test, records)
    sets = ds.card.extra["item_sets"]
    assert (sets["records"], sets["distinct"], sets["shared"], sets["records_sharing"]) == (779, 745, 26, 60)
    assert sets["straddling"] == 0 and sets["straddling_builder1"] > 0


@pytest.mark.parametrize("seed", [20, 22])  # seeds where item sets repeated across the blocks before
def test_mcr_gen_keeps_an_item_set_in_one_split(seed):
    items = mcr_gen.generate([250, 250], seed, "mcr")
    train = {frozenset(i.meta["items"]) for i in items[:250]}
    assert len(items) == 500 and not train & {frozenset(i.meta["items"]) for i in items[250:]}


def test_mcr_gen_seed_0_is_what_the_shipped_logs_ran(tmp_path):
    manifest = json.loads((ROOT / "logs" / "mcr-gen__local_smollm2" / "manifest.json").read_text())
    built = mcr_gen.build(tmp_path / "mcr-gen", seed=0)
    assert built.checksum == manifest["dataset"]["checksum"]  # the builder's data, task text included
    assert (manifest["dataset"]["n_train"], manifest["dataset"]["n_test"]) == (250, 250)  # full size
