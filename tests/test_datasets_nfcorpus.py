"""nfcorpus builders (the paper's 500 shortest, and the article-grouped variant) on a small
fixture in the original release's format, written here; and on ../shared/data-raw when present."""

import dataclasses
import functools
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from critique.cli import main
from critique.datasets import nfcorpus
from critique.datasets.registry import REGISTRY
from critique.datasets.splits import DatasetError

RAW = Path(__file__).resolve().parents[2] / "shared" / "data-raw" / "nfcorpus"


def write_raw(folder, per_split=8):
    release = folder / "original-release"
    release.mkdir(parents=True)
    titles = []
    for s, split in enumerate(nfcorpus.SPLITS):
        queries, docs, qrels = [], [], []
        for q in range(per_split):
            qid = f"PLAIN-{s}{q:02d}"
            queries.append(f"{qid}\tarticle {qid} about food {q} " + "words " * (q * 3))
            titles.append(json.dumps({"_id": qid, "text": f"Food Article {qid}"}))
            for d, level in enumerate([3, 3, 2, 2, 1] if q % 2 else [3, 2, 2]):
                doc = f"MED-{s}{q:02d}{d}"
                docs.append(f"{doc}\tpaper {doc} title abstract finding number {d} " + "x " * d)
                qrels.append(f"{qid}\t0\t{doc}\t{level}")
        qrels.append(f"PLAIN-{s}99\t0\tMED-{s}000\t1")  # only one level: never used
        queries.append(f"PLAIN-{s}99\tlonely article")
        (release / f"{split}.all.queries").write_text("\n".join(queries) + "\n", encoding="utf-8")
        (release / f"{split}.docs").write_text("\n".join(docs), encoding="utf-8")  # no final newline, as upstream
        (release / f"{split}.3-2-1.qrel").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (folder / "beir").mkdir()
    (folder / "beir" / "queries.jsonl").write_text("\n".join(titles) + "\n", encoding="utf-8")
    return folder


def reference_pool(raw):
    """Every (length, article, cited, other) of the fixture, computed here from the raw files."""
    release = raw / "original-release"
    texts, levels = {}, {}
    for split in nfcorpus.SPLITS:
        for name in (f"{split}.all.queries", f"{split}.docs"):
            for line in (release / name).read_text().splitlines():
                key, text = line.split("\t", 1)
                texts[key] = text.strip()
        for line in (release / f"{split}.3-2-1.qrel").read_text().splitlines():
            query, _, doc, level = line.split("\t")
            levels.setdefault(query, {}).setdefault(int(level), []).append(doc)
    pool = []
    for query, by_level in levels.items():
        lowest = min(by_level)
        if 3 in by_level and lowest < 3:
            pool += [(len(texts[query]) + len(texts[c]) + len(texts[o]), query, c, o)
                     for c in by_level[3] for o in by_level[lowest]]
    return sorted(pool)


def key(item):
    return (item.meta["length"], item.meta["article"], item.meta["cited"], item.meta["other"])


def test_default_keeps_the_shortest_combinations_split_at_random(tmp_path):
    raw = write_raw(tmp_path / "raw")
    pool = reference_pool(raw)
    assert len(pool) == 32 and len({c[0] for c in pool}) < len(pool)  # ties to break
    ds = nfcorpus.build(tmp_path / "a" / "nfcorpus", seed=0, raw=raw, n_train=10, n_test=10)
    assert (len(ds.train), len(ds.test)) == (10, 10)
    assert sorted(key(i) for i in ds.train + ds.test) == pool[:20]  # ties broken by article, cited, other
    assert all(i.meta["other_level"] == (1 if int(i.meta["article"][-2:]) % 2 else 2) for i in ds.train + ds.test)
    for split in (ds.train, ds.test):
        assert Counter(i.answer for i in split) == {"A": 5, "B": 5}
    other = nfcorpus.build(tmp_path / "b" / "nfcorpus", seed=1, raw=raw, n_train=10, n_test=10)
    assert sorted(key(i) for i in other.train + other.test) == pool[:20]
    assert {i.id for i in other.train} != {i.id for i in ds.train}  # the seed splits, not the length
    assert [key(i) for i in ds.train] != sorted(key(i) for i in ds.train)  # shuffled, not shortest first
    assert ds.card.name == "nfcorpus" and "builder 2" in ds.card.version
    assert ds.card.extra["combinations"] == 32 and ds.card.extra["articles_with_a_combination"] == 16


def test_default_card_counts_sizes_and_shared_articles(tmp_path):
    raw = write_raw(tmp_path / "raw")
    ds = nfcorpus.build(tmp_path / "out" / "nfcorpus", seed=2, raw=raw, n_train=12, n_test=12)
    extra = ds.card.extra
    for split, items in (("train", ds.train), ("test", ds.test)):
        chars = sum(len(i.question) for i in items)
        assert extra["size"][split] == {"items": 12, "characters": chars, "tokens_estimate": math.ceil(chars / 4),
                                        "words": sum(len(i.question.split()) for i in items),
                                        "longest_characters": max(len(i.question) for i in items)}
    assert "characters / 4" in extra["size"]["tokens_estimate"]
    train_articles = {i.meta["article"] for i in ds.train}
    sharing = sum(i.meta["article"] in train_articles for i in ds.test)
    assert sharing > 0  # each fixture article has two combinations: here some are split apart
    leakage = extra["leakage"]
    assert leakage["test_items_sharing_an_article_with_train"] == sharing
    assert leakage["articles_in_both"] == len(train_articles & {i.meta["article"] for i in ds.test})
    cited = {i.meta["cited"] for i in ds.train}
    assert leakage["test_items_whose_cited_paper_is_cited_in_train"] == sum(i.meta["cited"] in cited for i in ds.test)
    assert f"{sharing} of the test items share an article" in extra["summary"][-1]


def test_line_order_of_the_raw_files_does_not_matter(tmp_path):
    raw = write_raw(tmp_path / "raw")
    a = nfcorpus.build(tmp_path / "a" / "nfcorpus", seed=3, raw=raw, n_train=8, n_test=8)
    for name in ("test.3-2-1.qrel", "dev.docs", "dev.all.queries"):
        path = raw / "original-release" / name
        path.write_text("\n".join(reversed(path.read_text().splitlines())) + "\n")
    b = nfcorpus.build(tmp_path / "b" / "nfcorpus", seed=3, raw=raw, n_train=8, n_test=8)
    assert [i.to_json() for i in a.train + a.test] == [i.to_json() for i in b.train + b.test]


def test_build_prints_sizes_and_shared_articles(tmp_path, capsys, monkeypatch):
    write_raw(tmp_path / "raw" / "nfcorpus")  # --raw names the folder of folders, as `build all` does
    for name, build in (("nfcorpus", nfcorpus.build), ("nfcorpus-grouped", nfcorpus.build_grouped)):
        small = dataclasses.replace(REGISTRY[name], build=functools.partial(build, n_train=6, n_test=6))
        monkeypatch.setitem(REGISTRY, name, small)
        assert main(["datasets", "build", name, "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "data")]) == 0
        out = capsys.readouterr().out
        assert f"built {name}: 6 train / 6 test" in out
        assert f"  {name}: train: " in out and "tokens (characters / 4)" in out
        assert "of the test items share an article with a train item" in out
    assert "\n  nfcorpus-grouped: 0 of the test items share an article" in out


def test_grouped_pairs_the_cited_paper_with_the_furthest_level(tmp_path):
    raw = write_raw(tmp_path / "raw")
    ds = nfcorpus.build_grouped(tmp_path / "out" / "nfcorpus-grouped", seed=0, raw=raw, n_train=10, n_test=10)
    assert ds.card.name == "nfcorpus-grouped" and ds.card.extra["leakage"]["articles_in_both"] == 0
    assert (len(ds.train), len(ds.test)) == (10, 10)
    for item in ds.train + ds.test:
        meta = item.meta
        cited_at = "paper_a" if item.answer == "A" else "paper_b"
        assert meta[cited_at] == meta["cited"] and meta["cited"].endswith(("0", "1"))
        odd = int(meta["article"][-2:]) % 2
        assert meta["other_level"] == (1 if odd else 2)  # the lowest level the article has
        assert item.question.startswith(f"Article: Food Article {meta['article']}\n")
        assert "Paper A:\ntitle: paper" in item.question and "\nabstract: finding" in item.question
    assert not {i.meta["article"] for i in ds.train} & {i.meta["article"] for i in ds.test}
    for split in (ds.train, ds.test):
        counts = Counter(i.answer for i in split)
        assert counts["A"] == counts["B"] == 5
    per_article = Counter(i.meta["article"] for i in ds.train + ds.test)
    assert max(per_article.values()) <= nfcorpus.PER_ARTICLE


def test_combinations_every_one_or_capped_per_article_shortest_first():
    queries = {"q1": "x" * 10, "q2": "y" * 20, "q3": "w" * 5}
    docs = {f"d{k}": "z" * k for k in range(1, 10)}
    levels = {"q1": {3: {"d1", "d2", "d3"}, 2: {"d4", "d5"}, 1: {"d6", "d7", "d8"}}, "q2": {3: {"d9"}, 2: {"d1"}},
              "q3": {3: {"d1"}}}  # nothing below level 3: no combination
    every = nfcorpus.combinations(levels, queries, docs)
    assert len(every) == 9 + 1
    assert all(c[3] in ("d6", "d7", "d8") and c[4] == 1 for c in every if c[1] == "q1")  # the lowest level present
    assert [c[:4] for c in every[:4]] == [(17, "q1", "d1", "d6"), (18, "q1", "d1", "d7"), (18, "q1", "d2", "d6"),
                                          (19, "q1", "d1", "d8")]  # 10 + cited + other, ties by ids
    assert every[-1] == (30, "q2", "d9", "d1", 2)
    capped = nfcorpus.combinations(levels, queries, docs, per_article=nfcorpus.PER_ARTICLE)
    assert [c[0] for c in capped] == [17, 18, 18, 19, 19, 30] and capped == every[:5] + every[-1:]
    assert nfcorpus.shortest(every, 3, "here") == every[:3]
    with pytest.raises(DatasetError, match=r"here: only 10 article/paper combinations, 11 needed"):
        nfcorpus.shortest(every, 11, "here")


@pytest.mark.parametrize("build", [nfcorpus.build, nfcorpus.build_grouped])
def test_same_seed_same_bytes_and_titles_optional(tmp_path, build):
    raw = write_raw(tmp_path / "raw")
    a = build(tmp_path / "a" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
    b = build(tmp_path / "b" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
    assert a.checksum == b.checksum
    (raw / "beir" / "queries.jsonl").unlink()
    c = build(tmp_path / "c" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
    assert all(i.question.startswith("Article:\narticle ") for i in c.train)


def test_qrel_naming_an_unknown_document_is_an_error(tmp_path):
    raw = write_raw(tmp_path / "raw")
    qrel = raw / "original-release" / "dev.3-2-1.qrel"
    with qrel.open("a") as handle:
        handle.write("PLAIN-100\t0\tMED-404\t2\n")
    lines = len(qrel.read_text().splitlines())
    out = tmp_path / "out" / "nfcorpus"
    with pytest.raises(DatasetError, match=rf"dev.3-2-1.qrel:{lines}: document 'MED-404' has no text"):
        nfcorpus.build(out, raw=raw, n_train=4, n_test=4)
    assert not out.exists()


def test_short_line_and_bad_level(tmp_path):
    raw = write_raw(tmp_path / "raw")
    qrel = raw / "original-release" / "test.3-2-1.qrel"
    qrel.write_text(qrel.read_text() + "PLAIN-000\t0\tMED-0000\n")
    with pytest.raises(DatasetError, match=r"test.3-2-1.qrel:\d+: expected 4 fields"):
        nfcorpus.build(tmp_path / "out" / "nfcorpus", raw=raw, n_train=4, n_test=4)
    qrel.write_text("PLAIN-000\t0\tMED-0000\thigh\n")
    with pytest.raises(DatasetError, match=r"test.3-2-1.qrel:1: relevance level 'high'"):
        nfcorpus.build(tmp_path / "out" / "nfcorpus", raw=raw, n_train=4, n_test=4)


def test_malformed_docs_line_names_file_and_line_and_writes_nothing(tmp_path):
    raw = write_raw(tmp_path / "raw")
    docs = raw / "original-release" / "test.docs"
    lines = docs.read_text().split("\n")
    lines[4] = lines[4].replace("\t", " ")
    docs.write_text("\n".join(lines))
    for build in (nfcorpus.build, nfcorpus.build_grouped):
        out = tmp_path / "out" / "nfcorpus"
        with pytest.raises(DatasetError, match=rf"{docs}:5: expected 2 fields separated by"):
            build(out, raw=raw, n_train=4, n_test=4)
        assert not out.exists()


def test_too_few_combinations(tmp_path):
    raw = write_raw(tmp_path / "raw", per_split=2)
    with pytest.raises(DatasetError, match=r"only 8 article/paper combinations, 100 needed"):
        nfcorpus.build(tmp_path / "out" / "nfcorpus", raw=raw, n_train=50, n_test=50)
    with pytest.raises(DatasetError, match=r"\(train articles\): only \d+ article/paper combinations, 50 needed"):
        nfcorpus.build_grouped(tmp_path / "out" / "nfcorpus", raw=raw, n_train=50, n_test=50)


@pytest.mark.skipif(not RAW.is_dir(), reason="../shared/data-raw is absent")
def test_upstream_release_both_constructions(tmp_path):
    paper = nfcorpus.build(tmp_path / "nfcorpus", seed=0, raw=RAW)
    grouped = nfcorpus.build_grouped(tmp_path / "nfcorpus-grouped", seed=0, raw=RAW)
    queries, docs, levels, _, _ = nfcorpus.read_release(RAW)
    pool = nfcorpus.combinations(levels, queries, docs)
    assert sorted(key(i) for i in paper.train + paper.test) == [c[:4] for c in pool[:500]]
    assert max(i.meta["length"] for i in paper.train + paper.test) <= pool[500][0]
    leak = paper.card.extra["leakage"]
    assert 0 < leak["test_items_sharing_an_article_with_train"] <= 250  # the paper's split shares articles
    assert grouped.card.extra["leakage"]["test_items_sharing_an_article_with_train"] == 0
    assert not {i.meta["article"] for i in grouped.train} & {i.meta["article"] for i in grouped.test}
    for ds in (paper, grouped):
        size = ds.card.extra["size"]
        assert size["train"]["characters"] == sum(len(i.question) for i in ds.train)
        assert size["test"]["tokens_estimate"] == math.ceil(sum(len(i.question) for i in ds.test) / 4)
    longest = [ds.card.extra["size"]["test"]["longest_characters"] for ds in (paper, grouped)]
    assert longest[0] < longest[1]  # the 500 shortest are shorter than the grouped variant's
