"""nfcorpus: which of two medical papers does a NutritionFacts.org article cite directly?

Built from the original NFCorpus release (test and dev splits; the train split's texts are
not available). Relevance comes from the 4-level qrels ``*.3-2-1.qrel``: 3 = directly cited,
2 = indirectly linked, 1 = marginally relevant. For each article that has a directly cited
paper and a paper at a lower level, a combination pairs one level-3 paper with one paper at
the article's lowest available level. Articles are split in half (seeded) so train and test
never share an article; each article keeps at most ``PER_ARTICLE`` of its shortest
combinations, and each half keeps its 250 shortest. Paper A / paper B order is random,
balanced. Texts are upstream's preprocessed (lowercased, tokenized) form; titles of the
articles come in original casing from BEIR's ``queries.jsonl`` when it is present.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path

from critique.datasets.rawfiles import balanced_positions, check_balanced, fail, raw_checksums, raw_folder, read_jsonl, read_tsv, require
from critique.datasets.splits import DatasetCard, DatasetError, Item, write_dataset

NAME = "nfcorpus"
ANSWER_SPACE = ["A", "B"]
N_TRAIN = N_TEST = 250
PER_ARTICLE = 5
RELEASE = "original-release"
SPLITS = ("test", "dev")
DIRECT = 3

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


def combinations(levels, queries, docs) -> dict[str, list[tuple]]:
    """query -> its PER_ARTICLE shortest (length, cited, other, other_level), shortest first."""
    out = {}
    for query, by_level in sorted(levels.items()):
        lowest = min(by_level)
        if DIRECT not in by_level or lowest == DIRECT:
            continue
        combos = sorted((len(queries[query]) + len(docs[c]) + len(docs[o]), c, o, lowest)
                        for c, o in itertools.product(sorted(by_level[DIRECT]), sorted(by_level[lowest])))
        out[query] = combos[:PER_ARTICLE]
    return out


def paper_text(text: str) -> str:
    title, sep, abstract = text.partition(" abstract ")
    return f"title: {title}\nabstract: {abstract}" if sep else text


def question(article: str, title: str, paper_a: str, paper_b: str) -> str:
    head = f"Article: {title}\n{article}" if title else f"Article:\n{article}"
    return f"{head}\n\nPaper A:\n{paper_text(paper_a)}\n\nPaper B:\n{paper_text(paper_b)}"


def _select(rng: random.Random, combos: dict[str, list[tuple]], n: int, where: str) -> list[tuple]:
    pool = sorted((c + (q,) for q, cs in combos.items() for c in cs), key=lambda c: (c[0], c[4], c[1], c[2]))
    if len(pool) < n:
        raise DatasetError(f"{where}: only {len(pool)} article/paper combinations, {n} needed")
    chosen = pool[:n]
    rng.shuffle(chosen)
    return chosen


def build(out: Path, seed: int = 0, raw: Path | None = None, n_train: int = N_TRAIN, n_test: int = N_TEST):
    folder = raw_folder(raw, NAME)
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
    combos = combinations(levels, queries, docs)
    rng = random.Random(seed)
    articles = sorted(combos)
    rng.shuffle(articles)
    halves = {"train": articles[0::2], "test": articles[1::2]}
    splits = {}
    for split, n in (("train", n_train), ("test", n_test)):
        chosen = _select(rng, {q: combos[q] for q in halves[split]}, n, f"{release} ({split} articles)")
        positions = balanced_positions(rng, n, 2, offset=0 if split == "train" else 1)
        splits[split] = [_item(c, pos, queries, docs, titles) for c, pos in zip(chosen, positions)]
        check_balanced(splits[split], ANSWER_SPACE, f"{out}/{split}.jsonl")
    card = DatasetCard(
        name=NAME, task=TASK, answer_space=ANSWER_SPACE,
        source="NFCorpus (Boteva et al., ECIR 2016), original release (test and dev splits, 3-2-1 qrels) "
               "as committed in github.com/hakimamarullah/medisearch-api @ 0ae71a4bb241; article titles from "
               "BEIR queries.jsonl (github.com/TwistXXF/PaperPilot-Reproduction @ 5471766d700d)",
        license="NFCorpus terms: free for academic use; other uses per NutritionFacts.org terms of use",
        version=f"NFCorpus original release, {'+'.join(SPLITS)} splits, 3-2-1 qrels; builder 1", seed=seed,
        build_command=f"critique datasets build {NAME} --raw DIR --seed {seed}",
        description="Article + two papers; the directly cited paper (level 3) vs. a paper at the article's "
                    f"lowest available level; article-disjoint splits; shortest combinations, at most "
                    f"{PER_ARTICLE} per article.",
        extra={"raw_sha256": raw_checksums(folder, used), "per_article": PER_ARTICLE},
    )
    return write_dataset(out, card, splits["train"], splits["test"])


def _item(combo: tuple, position: int, queries, docs, titles) -> Item:
    length, cited, other, other_level, query = combo
    a, b = (cited, other) if position == 0 else (other, cited)
    meta = {"article": query, "cited": cited, "other": other, "other_level": other_level,
            "paper_a": a, "paper_b": b, "length": length}
    return Item(f"nf-{query}-{cited}-{other}", question(queries[query], titles.get(query, ""), docs[a], docs[b]),
                ANSWER_SPACE[position], None, meta)
