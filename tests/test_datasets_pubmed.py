"""pubmed builder on a small PubMedQA-style fixture written here."""

import json
from collections import Counter

import pytest

from critique.datasets import pubmed
from critique.datasets.splits import DatasetError


def write_raw(folder, n=60):
    folder.mkdir(parents=True, exist_ok=True)
    decisions = ["yes", "yes", "no", "maybe"]
    data = {str(1000 + k): {"QUESTION": f"Does treatment {k} reduce risk {k % 7}?", "CONTEXTS": ["..."],
                            "YEAR": str(2000 + k % 20), "final_decision": decisions[k % 4], "LONG_ANSWER": "."}
            for k in range(n)}
    truth = {pmid: r["final_decision"] for pmid, r in list(data.items())[: n // 2]}
    (folder / "ori_pqal.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    (folder / "test_ground_truth.json").write_text(json.dumps(truth, indent=1), encoding="utf-8")
    return folder, data, truth


def test_build_drops_maybe_keeps_both_labels_and_official_test_split(tmp_path):
    raw, data, truth = write_raw(tmp_path / "raw")
    ds = pubmed.build(tmp_path / "out" / "pubmed", seed=1, raw=raw, n_train=10, n_test=10)
    assert (len(ds.train), len(ds.test)) == (10, 10)
    for item in ds.train + ds.test:
        pmid = item.meta["pmid"]
        assert item.question == data[pmid]["QUESTION"] and item.answer == data[pmid]["final_decision"]
        assert item.answer in ("yes", "no")
    assert all(i.meta["pmid"] in truth for i in ds.test)
    assert not any(i.meta["pmid"] in truth for i in ds.train)
    for split in (ds.train, ds.test):
        counts = Counter(i.answer for i in split)
        assert counts["yes"] > counts["no"] > 0  # upstream ratio (2:1 here), both labels present


def test_same_seed_same_bytes(tmp_path):
    raw, _, _ = write_raw(tmp_path / "raw")
    a = pubmed.build(tmp_path / "a" / "pubmed", seed=2, raw=raw, n_train=8, n_test=8)
    b = pubmed.build(tmp_path / "b" / "pubmed", seed=2, raw=raw, n_train=8, n_test=8)
    assert a.checksum == b.checksum


def test_bad_decision_names_file_and_line(tmp_path):
    raw, data, _ = write_raw(tmp_path / "raw")
    data["1005"]["final_decision"] = "perhaps"
    (raw / "ori_pqal.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    line = next(n for n, text in enumerate((raw / "ori_pqal.json").read_text().splitlines(), 1) if '"1005"' in text)
    out = tmp_path / "out" / "pubmed"
    with pytest.raises(DatasetError, match=rf"ori_pqal.json:{line}: PMID 1005: final_decision 'perhaps'"):
        pubmed.build(out, raw=raw, n_train=4, n_test=4)
    assert not out.exists()


def test_missing_question_and_disagreeing_ground_truth(tmp_path):
    raw, data, truth = write_raw(tmp_path / "raw")
    del data["1003"]["QUESTION"]
    (raw / "ori_pqal.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"ori_pqal.json:\d+: PMID 1003: missing field QUESTION"):
        pubmed.build(tmp_path / "out" / "pubmed", raw=raw, n_train=4, n_test=4)
    raw, data, truth = write_raw(tmp_path / "raw2")
    truth["1000"] = "no"
    (raw / "test_ground_truth.json").write_text(json.dumps(truth, indent=1), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"test_ground_truth.json:2: PMID 1000: 'no' disagrees"):
        pubmed.build(tmp_path / "out" / "pubmed", raw=raw, n_train=4, n_test=4)


def test_too_few_questions_and_missing_file(tmp_path):
    raw, _, _ = write_raw(tmp_path / "raw", n=12)
    with pytest.raises(DatasetError, match=r"needs 20 yes/no questions"):
        pubmed.build(tmp_path / "out" / "pubmed", raw=raw, n_train=20, n_test=2)
    (raw / "test_ground_truth.json").unlink()
    with pytest.raises(DatasetError, match=r"test_ground_truth.json: required raw file is missing"):
        pubmed.build(tmp_path / "out" / "pubmed", raw=raw)
