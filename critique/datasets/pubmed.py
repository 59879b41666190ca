"""pubmed: PubMedQA expert-labelled questions (PQA-L) with a yes/no decision.

"maybe" questions are dropped and only the question is shown (no abstract), as in the
study. The official 500-question test split (``test_ground_truth.json``) supplies the
test items and the other 500 questions the train items, so the split follows upstream.
Each split is sampled stratified by label, keeping upstream's yes/no ratio.
"""

from __future__ import annotations

import random
from pathlib import Path

from critique.datasets.rawfiles import fail, raw_checksums, raw_folder, read_json, require
from critique.datasets.splits import DatasetCard, DatasetError, Item, write_dataset

NAME = "pubmed"
ANSWER_SPACE = ["yes", "no"]
N_TRAIN = N_TEST = 250

TASK = (
    "Each question is a research question from a biomedical paper. Decide, from what is "
    "known in the biomedical literature, whether the answer is yes or no."
)


def _line_of(text: str, key: str) -> int:
    at = text.find(f'"{key}"')
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def read_questions(path: Path) -> dict[str, dict]:
    """PMID -> {question, decision, year}; errors name the file and line of the PMID."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise fail(path, 1, "expected one JSON object mapping PMID to a question record")
    text = path.read_text(encoding="utf-8")
    out = {}
    for pmid, record in data.items():
        if not isinstance(record, dict):
            raise fail(path, _line_of(text, pmid), f"PMID {pmid}: record is not an object")
        question, decision = record.get("QUESTION"), record.get("final_decision")
        if not isinstance(question, str) or not question.strip():
            raise fail(path, _line_of(text, pmid), f"PMID {pmid}: missing field QUESTION")
        if decision not in ("yes", "no", "maybe"):
            raise fail(path, _line_of(text, pmid), f"PMID {pmid}: final_decision {decision!r} is not yes/no/maybe")
        out[pmid] = {"question": question.strip(), "decision": decision, "year": str(record.get("YEAR", ""))}
    return out


def read_test_ids(path: Path, questions: dict[str, dict]) -> set[str]:
    truth = read_json(path)
    if not isinstance(truth, dict):
        raise fail(path, 1, "expected one JSON object mapping PMID to a decision")
    text = path.read_text(encoding="utf-8")
    for pmid, decision in truth.items():
        if pmid not in questions:
            raise fail(path, _line_of(text, pmid), f"PMID {pmid} is not in ori_pqal.json")
        if decision != questions[pmid]["decision"]:
            raise fail(path, _line_of(text, pmid), f"PMID {pmid}: {decision!r} disagrees with ori_pqal.json")
    return set(truth)


def stratified(rng: random.Random, pool: list[tuple[str, dict]], n: int, where: str) -> list[tuple[str, dict]]:
    """``n`` records keeping the pool's yes/no ratio, with both labels present."""
    by_label = {a: [p for p in pool if p[1]["decision"] == a] for a in ANSWER_SPACE}
    n_yes = min(max(round(n * len(by_label["yes"]) / max(len(pool), 1)), 1), n - 1)
    if n < 2 or len(pool) < n or n_yes > len(by_label["yes"]) or n - n_yes > len(by_label["no"]):
        counts = {a: len(v) for a, v in by_label.items()}
        raise DatasetError(f"{where}: needs {n} yes/no questions with both labels, has {counts}")
    chosen = rng.sample(by_label["yes"], n_yes) + rng.sample(by_label["no"], n - n_yes)
    rng.shuffle(chosen)
    return chosen


def _item(pmid: str, record: dict, official: str) -> Item:
    return Item(f"pubmed-{pmid}", record["question"], record["decision"], None,
                {"pmid": pmid, "year": record["year"], "official_split": official})


def build(out: Path, seed: int = 0, raw: Path | None = None, n_train: int = N_TRAIN, n_test: int = N_TEST):
    folder = raw_folder(raw, NAME)
    data_path, truth_path = require(folder, "ori_pqal.json", "test_ground_truth.json")
    questions = read_questions(data_path)
    test_ids = read_test_ids(truth_path, questions)
    decided = sorted((p, r) for p, r in questions.items() if r["decision"] != "maybe")
    rng = random.Random(seed)
    train = stratified(rng, [p for p in decided if p[0] not in test_ids], n_train, f"{data_path} (train pool)")
    test = stratified(rng, [p for p in decided if p[0] in test_ids], n_test, f"{truth_path} (test pool)")
    card = DatasetCard(
        name=NAME, task=TASK, answer_space=ANSWER_SPACE,
        source="PubMedQA PQA-L (Jin et al., 2019), github.com/pubmedqa/pubmedqa @ 1cbae8e92f72, "
               "data/ori_pqal.json and data/test_ground_truth.json",
        license="MIT (repository); questions come from PubMed abstracts (NLM terms)",
        version="PubMedQA PQA-L, 1000 expert-labelled questions; builder 1", seed=seed,
        build_command=f"critique datasets build {NAME} --raw DIR --seed {seed}",
        description="Yes/no PubMedQA questions ('maybe' dropped), question only; test from the official "
                    "test split, train from the rest, each stratified by label.",
        extra={"raw_sha256": raw_checksums(folder, [data_path, truth_path])},
    )
    return write_dataset(out, card, [_item(p, r, "train/dev") for p, r in train],
                         [_item(p, r, "test") for p, r in test])
