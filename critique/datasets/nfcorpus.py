"""nfcorpus: which of two medical papers does a NutritionFacts.org article cite directly?

Built from the original NFCorpus release (test and dev splits; the train split's texts are
not available). Relevance comes from the 4-level qrels ``*.3-2-1.qrel``: 3 = directly cited,
2 = indirectly linked, 1 = marginally relevant. A *combination* is an article, one paper it
cites directly (level 3) and one paper at the article's furthest available level of
separation (its lowest level: 1 if it has one, else 2). Its length is the characters of the
article and both papers.

Two constructions, one module:

- ``nfcorpus`` (the paper's): every combination of every article, the 500 shortest (ties
  broken by article, cited and other paper id), shuffled with the seed and split 250/250.
  An article contributes *every* combination it has, not just one: the paper's wording
  ("per article, one directly cited paper and one paper at the furthest level") leaves this
  open, but one combination per article cannot give 500 here (only 215 articles of the
  release's test and dev splits have both a directly cited and a lower-level paper), and the
  paper then "sampled the 500 shortest combinations", which needs more than one per article.
  So articles repeat (the 500 shortest come from 24 articles) and an article may appear in
  train and in test: the card counts the test items that share an article, or a cited
  paper, with a train item (``extra.leakage``).
- ``nfcorpus-grouped`` (the variant for measuring train/test leakage): articles are split in
  half with the seed, so train and test never share an article; each article keeps at most
  ``PER_ARTICLE`` of its shortest combinations, and each half keeps its 250 shortest.

Paper A / paper B order is random, balanced. Texts are upstream's preprocessed (lowercased,
tokenized) form; the articles' titles come in original casing from BEIR's ``queries.jsonl``
when it is present. Both cards record their size (``extra.size``): characters, words and an
estimate of tokens, characters / 4 rounded up. No tokenizer is loaded, so the card does not
depend on what is installed; on this lowercased, stop-word-filtered text OpenAI's cl100k_base
gives about 5 characters a token, so the estimate is on the high side (safe for context limits).
Both cards also count what train gives away about test (``extra.leakage``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

from critique.datasets.rawfiles import (balanced_positions, check_balanced, fail, raw_checksums, raw_folder, read_jsonl,
                                       read_tsv, require)
from critique.datasets.splits import Dataset, DatasetCard, DatasetError, Item, write_dataset

NAME = "nfcorpus"
GROUPED = "nfcorpus-grouped"
ANSWER_SPACE = ["A", "B"]
N_TRAIN = N_TEST = 250
PER_ARTICLE = 5  # nfcorpus-grouped only
RELEASE = "original-release"
SPLITS = ("test", "dev")
DIRECT = 3
BUILDER = 2  # 1: article-grouped only, under the name nfcorpus
CHARS_PER_TOKEN = 4

TASK = (
    "Each question shows a health article from NutritionFacts.org and two medical research "
    "papers, A and B (lowercased, preprocessed text). One of the papers is cited directly by "
    "the article; the other is only indirectly or marginally related. Answer A or B: which "
    "paper does the article cite directly?"
)


def read_texts(path: Path) -> dict[str, str]:
    """ID -> text of a ``*.docs`` or ``*.queries`` file (TSV ``ID<TAB>text``)."""
    texts = {}
    for line, (key, *rest) in read_tsv(path, 2, header=False):
        if key in texts:
            raise fail(path, line, f"duplicate id {key!r}")
        texts[key] = "\t".join(rest).strip()
    return texts


def read_qrels(path: Path, queries: dict, docs: dict) -> dict[str, dict[int, set[str]]]:
    """query -> level -> docs, checking that every id has a text."""
    levels: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for line, fields in read_tsv(path, 4, header=False):
        query, _, doc, level = fields[:4]
        if not level.strip().isdigit():
            raise fail(path, line, f"relevance level {level!r} is not an integer")
        if query not in queries:
            raise fail(path, line, f"query {query!r} has no text in the matching .all.queries file")
        if doc not in docs:
            raise fail(path, line, f"document {doc!r} has no text in the matching .docs file")
        levels[query][int(level)].add(doc)
    return levels


def read_titles(folder: Path) -> dict[str, str]:
    path = folder / "beir" / "queries.jsonl"
    if not path.is_file():
        return {}
    titles = {}
    for line, record in read_jsonl(path):
        if "_id" not in record or "text" not in record:
            raise fail(path, line, "missing field _id or text")
        titles[str(record["_id"])] = str(record["text"]).strip()
    return titles


def read_release(folder: Path):
    """(queries, docs, levels, titles, files read) of the release's test and dev splits."""
    release = folder / RELEASE
    queries, docs, levels, used = {}, {}, {}, []
    for split in SPLITS:
        q_path, d_path, r_path = require(release, f"{split}.all.queries", f"{split}.docs", f"{split}.3-2-1.qrel")
        queries.update(read_texts(q_path))
        docs.update(read_texts(d_path))
        levels.update(read_qrels(r_path, queries, docs))
        used += [q_path, d_path, r_path]
    titles = read_titles(folder)
    if titles:
        used.append(folder / "beir" / "queries.jsonl")
    return queries, docs, levels, titles, used


def combinations(levels, queries, docs, per_article: int | None = None) -> list[tuple]:
    """Every (length, article, cited, other, other_level), shortest first, ties broken by the
    ids; with ``per_article``, only each article's ``per_article`` shortest."""
    out = []
    for query, by_level in sorted(levels.items()):
        lowest = min(by_level)
        if DIRECT not in by_level or lowest == DIRECT:
            continue
        mine = sorted((len(queries[query]) + len(docs[c]) + len(docs[o]), query, c, o, lowest)
                      for c in by_level[DIRECT] for o in by_level[lowest])
        out += mine[:per_article] if per_article else mine
    return sorted(out)


def shortest(pool: list[tuple], n: int, where: str) -> list[tuple]:
    """The ``n`` shortest combinations of a pool sorted shortest first."""
    if len(pool) < n:
        raise DatasetError(f"{where}: only {len(pool)} article/paper combinations, {n} needed")
    return pool[:n]


def paper_text(text: str) -> str:
    title, sep, abstract = text.partition(" abstract ")
    return f"title: {title}\nabstract: {abstract}" if sep else text


def question(article: str, title: str, paper_a: str, paper_b: str) -> str:
    head = f"Article: {title}\n{article}" if title else f"Article:\n{article}"
    return f"{head}\n\nPaper A:\n{paper_text(paper_a)}\n\nPaper B:\n{paper_text(paper_b)}"


def build(out: Path, seed: int = 0, raw: Path | None = None, n_train: int = N_TRAIN, n_test: int = N_TEST):
    """The paper's construction: the ``n_train + n_test`` shortest combinations, split at random."""
    folder = raw_folder(raw, NAME)
    queries, docs, levels, titles, used = read_release(folder)
    pool = combinations(levels, queries, docs)
    chosen = shortest(pool, n_train + n_test, str(folder / RELEASE))
    rng = random.Random(seed)
    rng.shuffle(chosen)
    parts = {"train": chosen[:n_train], "test": chosen[n_train:]}
    positions = {"train": balanced_positions(rng, n_train, 2), "test": balanced_positions(rng, n_test, 2, offset=1)}
    articles = len({c[1] for c in pool})
    description = (
        "Article + two papers: the directly cited paper (level 3) vs. a paper at the article's lowest "
        f"available level. The paper's construction: of every such combination ({len(pool)} here), the "
        f"{n_train + n_test} shortest by characters, split {n_train}/{n_test} at random. Each article "
        f"contributes every combination it has ({articles} articles have any), not just one, so articles "
        f"repeat and may appear in both splits (extra.leakage); {GROUPED} is the article-disjoint variant "
        "for measuring that leakage.")
    return _write(out, NAME, seed, parts, positions, (queries, docs, titles), folder, used, description,
                  {"combinations": len(pool), "articles_with_a_combination": articles})


def build_grouped(out: Path, seed: int = 0, raw: Path | None = None, n_train: int = N_TRAIN,
                  n_test: int = N_TEST):
    """Article-disjoint halves, at most PER_ARTICLE combinations an article, the shortest of each
    (builder 1's ``nfcorpus``: the same seed gives the same items)."""
    folder = raw_folder(raw, GROUPED)
    queries, docs, levels, titles, used = read_release(folder)
    pool = combinations(levels, queries, docs, PER_ARTICLE)
    rng = random.Random(seed)
    articles = sorted({c[1] for c in pool})
    rng.shuffle(articles)
    halves = {"train": set(articles[0::2]), "test": set(articles[1::2])}
    parts, positions = {}, {}
    for split, n, offset in (("train", n_train, 0), ("test", n_test, 1)):
        mine = [c for c in pool if c[1] in halves[split]]
        parts[split] = shortest(mine, n, f"{folder / RELEASE} ({split} articles)")
        rng.shuffle(parts[split])
        positions[split] = balanced_positions(rng, n, 2, offset=offset)
    description = (
        "Article + two papers: the directly cited paper (level 3) vs. a paper at the article's lowest "
        "available level. The variant for measuring train/test leakage: articles split in half with the "
        "seed, so train and test never share an article; each half keeps its shortest combinations, at "
        f"most {PER_ARTICLE} per article. {NAME} is the paper's construction.")
    return _write(out, GROUPED, seed, parts, positions, (queries, docs, titles), folder, used, description,
                  {"combinations": len(pool), "articles_with_a_combination": len(articles),
                   "per_article": PER_ARTICLE})


def _write(out, name, seed, parts, positions, texts, folder, used, description, extra) -> Dataset:
    splits = {}
    for split in ("train", "test"):
        splits[split] = [_item(c, pos, *texts) for c, pos in zip(parts[split], positions[split])]
        check_balanced(splits[split], ANSWER_SPACE, f"{out}/{split}.jsonl")
    size = {split: measure(items) for split, items in splits.items()}
    size["tokens_estimate"] = f"characters / {CHARS_PER_TOKEN}, rounded up: a rule of thumb, no tokenizer loaded"
    leakage = measure_leakage(splits["train"], splits["test"])
    card = DatasetCard(
        name=name, task=TASK, answer_space=ANSWER_SPACE,
        source="NFCorpus (Boteva et al., ECIR 2016), original release (test and dev splits, 3-2-1 qrels) "
               "as committed in github.com/hakimamarullah/medisearch-api @ 0ae71a4bb241; article titles from "
               "BEIR queries.jsonl (github.com/TwistXXF/PaperPilot-Reproduction @ 5471766d700d)",
        license="NFCorpus terms: free for academic use; other uses per NutritionFacts.org terms of use",
        version=f"NFCorpus original release, {'+'.join(SPLITS)} splits, 3-2-1 qrels; builder {BUILDER}",
        seed=seed, build_command=f"critique datasets build {name} --raw DIR --seed {seed}",
        description=description,
        extra={"raw_sha256": raw_checksums(folder, used), **extra, "size": size, "leakage": leakage,
               "summary": summary(size, leakage)},
    )
    return write_dataset(out, card, splits["train"], splits["test"])


def measure(items: list[Item]) -> dict:
    """Size of a split's questions: items, characters, words, estimated tokens, longest."""
    chars = sum(len(i.question) for i in items)
    return {"items": len(items), "characters": chars, "words": sum(len(i.question.split()) for i in items),
            "tokens_estimate": -(-chars // CHARS_PER_TOKEN),
            "longest_characters": max((len(i.question) for i in items), default=0)}


def measure_leakage(train: list[Item], test: list[Item]) -> dict:
    """How much of the test split the train split gives away: test items whose article is in
    train, and test items whose cited (other) paper is a cited (other) paper of a train item."""
    seen = {key: {i.meta[key] for i in train} for key in ("article", "cited", "other")}
    tested = {i.meta["article"] for i in test}
    count = {key: sum(i.meta[key] in seen[key] for i in test) for key in seen}
    return {"articles_train": len(seen["article"]), "articles_test": len(tested),
            "articles_in_both": len(seen["article"] & tested),
            "test_items_sharing_an_article_with_train": count["article"],
            "test_items_whose_cited_paper_is_cited_in_train": count["cited"],
            "test_items_whose_other_paper_is_other_in_train": count["other"]}


def summary(size: dict, leakage: dict) -> list[str]:
    """The lines `critique datasets build` prints under the counts."""
    lines = [f"{split}: {s['characters']:,} characters, ~{s['tokens_estimate']:,} tokens (characters / "
             f"{CHARS_PER_TOKEN}), longest question {s['longest_characters']:,} characters"
             for split, s in size.items() if isinstance(s, dict)]
    lines.append(f"{leakage['test_items_sharing_an_article_with_train']} of the test items share an article "
                 f"with a train item ({leakage['articles_in_both']} of {leakage['articles_test']} test "
                 f"articles are also in train); {leakage['test_items_whose_cited_paper_is_cited_in_train']} "
                 f"have a cited paper that train shows as cited")
    return lines


def _item(combo: tuple, position: int, queries, docs, titles) -> Item:
    length, query, cited, other, other_level = combo
    a, b = (cited, other) if position == 0 else (other, cited)
    meta = {"article": query, "cited": cited, "other": other, "other_level": other_level,
            "paper_a": a, "paper_b": b, "length": length}
    return Item(f"nf-{query}-{cited}-{other}", question(queries[query], titles.get(query, ""), docs[a], docs[b]),
                ANSWER_SPACE[position], None, meta)
