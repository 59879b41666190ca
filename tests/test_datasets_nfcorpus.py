"""nfcorpus builder on a small fixture in the original release's format, written here."""

import json
import random
from collections import Counter

import pytest

from critique.datasets import nfcorpus
from critique.datasets.splits import DatasetError


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


def test_build_pairs_the_cited_paper_with_the_furthest_level(tmp_path):
    raw = write_raw(tmp_path / "raw")
    ds = nfcorpus.build(tmp_path / "out" / "nfcorpus", seed=0, raw=raw, n_train=10, n_test=10)
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


def test_combinations_are_capped_per_article_and_the_shortest_are_kept():
    queries = {"q1": "x" * 10, "q2": "y" * 20}
    docs = {f"d{k}": "z" * k for k in range(1, 10)}
    levels = {"q1": {3: {"d1", "d2", "d3"}, 2: {"d4", "d5"}, 1: {"d6", "d7", "d8"}}, "q2": {3: {"d9"}, 2: {"d1"}}}
    combos = nfcorpus.combinations(levels, queries, docs)
    assert len(combos["q1"]) == nfcorpus.PER_ARTICLE < 9
    assert all(c[2] in ("d6", "d7", "d8") and c[3] == 1 for c in combos["q1"])  # the lowest level present
    assert [c[0] for c in combos["q1"]] == [17, 18, 18, 19, 19]  # 10 + cited + other, shortest first
    assert combos["q2"] == [(30, "d9", "d1", 2)]
    chosen = nfcorpus._select(random.Random(0), combos, 3, "here")
    assert sorted(c[0] for c in chosen) == [17, 18, 18]
    with pytest.raises(DatasetError, match=r"here: only 6 article/paper combinations, 7 needed"):
        nfcorpus._select(random.Random(0), combos, 7, "here")


def test_same_seed_same_bytes_and_titles_optional(tmp_path):
    raw = write_raw(tmp_path / "raw")
    a = nfcorpus.build(tmp_path / "a" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
    b = nfcorpus.build(tmp_path / "b" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
    assert a.checksum == b.checksum
    (raw / "beir" / "queries.jsonl").unlink()
    c = nfcorpus.build(tmp_path / "c" / "nfcorpus", seed=4, raw=raw, n_train=6, n_test=6)
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


def test_too_few_combinations(tmp_path):
    raw = write_raw(tmp_path / "raw", per_split=2)
    with pytest.raises(DatasetError, match=r"article/paper combinations, 50 needed"):
        nfcorpus.build(tmp_path / "out" / "nfcorpus", raw=raw, n_train=50, n_test=50)
