"""Presets (critique.datasets.preset): each recipe imports tiny local files written in its set's own schema, as the
hub serves it (the same file layout, column names, label encoding and split names), into a dataset folder that
`critique run` then runs with the fake provider; a free-form BBH task and a missing column are refused in one
line naming why."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from critique.cli import main  # noqa: E402
from critique.datasets import preset  # noqa: E402
from critique.datasets.registry import REGISTRY, resolve  # noqa: E402
from critique.datasets.splits import DatasetError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BANKING = ["activate_my_card", "age_limit", "card_arrival", "lost_or_stolen_card", "top_up_failed"]  # of its 77
CLINC = ["restaurant_reviews", "nutrition_info", "oos", "account_blocked", "translate"]  # of its 151


def parquet(path: Path, columns: dict, features=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=features).to_parquet(str(path))


def bbh(root: Path) -> Path:
    """lukaemon/bbh's Parquet export: <task>/test/0000.parquet, columns input and target (strings)."""
    targets = ["(A)", "(B)", "(C)", "(A)", "(B)", "(C)", "(A)", "Monsters, Inc", "(B)", "(C)"]
    parquet(root / "movie_recommendation" / "test" / "0000.parquet",
            {"input": [f"Find a movie similar to film {i}, film {i + 1}:\nOptions:\n(A) One\n(B) Two\n(C) Three"
                       for i in range(10)], "target": targets})
    parquet(root / "word_sorting" / "test" / "0000.parquet",
            {"input": ["Sort the following words alphabetically: List: pear apple"], "target": ["apple pear"]})
    return root


def banking77(root: Path) -> Path:
    """PolyAI/banking77's Parquet export: default/{train,test}/0000.parquet, text and a ClassLabel label."""
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=BANKING)})
    for split, n in (("train", 10), ("test", 4)):
        parquet(root / "default" / split / "0000.parquet",
                {"text": [f"{split} message {i} about my card" for i in range(n)], "label": [i % 5 for i in range(n)]},
                features)
    return root


def clinc150(root: Path) -> Path:
    """clinc/clinc_oos's Parquet export: <config>/{train,validation,test}/0000.parquet, text and a ClassLabel
    intent; the small config beside plus, which is not read."""
    features = datasets.Features({"text": datasets.Value("string"), "intent": datasets.ClassLabel(names=CLINC)})
    for config in ("plus", "small"):
        for split in ("train", "validation", "test"):
            parquet(root / config / split / "0000.parquet",
                    {"text": [f"{config} {split} request {i}" for i in range(5)], "intent": list(range(5))}, features)
    return root


def mab(root: Path) -> Path:
    """ai-hyz/MemoryAgentBench: data/<split>-00000-of-00001.parquet, rows of context, questions, answers and a
    metadata struct whose source names the sub-dataset; the ICL context holds "<text>\\nlabel: <n>" shots."""
    shots = [("How do I activate my card?", "3"), ("Is there an age limit?", "1"), ("My card has not arrived", "0"),
             ("I lost my card", "2"), ("Where is my new card?", "0"), ("Activate the card please", "3")]
    features = datasets.Features({
        "context": datasets.Value("string"), "questions": datasets.Sequence(datasets.Value("string")),
        "answers": datasets.Sequence(datasets.Sequence(datasets.Value("string"))),
        "metadata": {"source": datasets.Value("string"), "qa_pair_ids": datasets.Sequence(datasets.Value("string"))}})
    rows = {"context": ["\n\n".join(f"{text}\nlabel: {label}" for text, label in shots),
                        "User: I liked Alien.\nAssistant: Try Aliens."],
            "questions": [["How old must I be?", "The card never came", "Stolen card!"], ["I like horror films"]],
            "answers": [[["1"], ["0"], ["2"]], [["Aliens (1986)", "The Thing (1982)"]]],
            "metadata": [{"source": "icl_banking77_5900shot_balance", "qa_pair_ids": ["b0", "b1", "b2"]},
                         {"source": "recsys_redial_full", "qa_pair_ids": ["r0"]}]}
    parquet(root / "data" / "Test_Time_Learning-00000-of-00001.parquet", rows, features)
    parquet(root / "data" / "Accurate_Retrieval-00000-of-00001.parquet",  # another split, not read
            {**rows, "metadata": [{"source": "eventqa_full", "qa_pair_ids": ["e0"]}] * 2}, features)
    return root


def streambench(root: Path) -> Path:
    """appier-ai-research/StreamBench: a config per set, ddxplus/{validate,test}-00000-of-00001.parquet named by
    the card's configs; PATIENT_PROFILE and PATHOLOGY (English names) beside the DDXPlus columns."""
    pathologies = ["Bronchitis", "GERD", "Pneumonia", "URTI"]
    for split, n in (("validate", 8), ("test", 4)):
        parquet(root / "ddxplus" / f"{split}-00000-of-00001.parquet",
                {"AGE": [30 + i for i in range(n)], "SEX": ["F", "M"] * (n // 2),
                 "PATHOLOGY": [pathologies[i % 4] for i in range(n)],
                 "INITIAL_EVIDENCE": ["E_91"] * n, "EVIDENCES": ["['E_91', 'E_53']"] * n,
                 "PATIENT_PROFILE": [f"Age: {30 + i}\nSex: F\n{split} symptom {i}: cough" for i in range(n)]})
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: ddxplus\n  data_files:\n  - split: validate\n    path: ddxplus/validate-*\n"
        "  - split: test\n    path: ddxplus/test-*\n---\n# StreamBench\n")
    return root


CASES = [  # (source, writer, dataset folder, train / test items, answer space)
    ("preset:bbh:movie_recommendation", bbh, "bbh-movie_recommendation", (5, 4), ["(A)", "(B)", "(C)"]),
    ("preset:banking77", banking77, "banking77", (10, 4), BANKING),
    ("preset:clinc150", clinc150, "clinc150-plus", (5, 5), CLINC),
    ("preset:mab-ttl:banking77", mab, "mab-ttl-banking77", (6, 3), ["0", "1", "2", "3"]),
    ("preset:ddxplus", streambench, "ddxplus", (8, 4), ["Bronchitis", "GERD", "Pneumonia", "URTI"]),
]


@pytest.mark.parametrize("source, write, folder, sizes, space", CASES, ids=[c[2] for c in CASES])
def test_each_preset_imports_its_sets_schema_and_runs(home, fake_llm, capsys, source, write, folder, sizes, space):
    local = write(home / "local")
    assert main(["datasets", "import", source, "--from", str(local)]) == 0
    said = capsys.readouterr().out
    canonical = source if source != "preset:clinc150" else "preset:clinc150:plus"
    assert f"imported {canonical}: {sizes[0]} train / {sizes[1]} test" in said
    assert f"use it with --dataset {canonical}" in said
    dataset = resolve(source)
    assert dataset.path == home / "data" / folder and dataset.card.answer_space == space
    assert (len(dataset.train), len(dataset.test)) == sizes
    found, config = preset.find(source)
    assert dataset.card.source == canonical and dataset.card.license == found.license
    assert dataset.card.task == found.task_for(config)
    assert dataset.card.extra["preset"]["from"] == str(local.resolve())
    assert dataset.card.extra["hub"]["origin"]["path"] == str(local.resolve())
    assert main(["run", "--dataset", source, "--model", "fake/model", "--limit", "2", "--strategies", "zero_shot",
                 "--out", str(home / "runs" / folder), "--quiet"]) == 0
    prompts = [m["content"] for call in fake_llm.CALLS for m in call["messages"]]
    assert len(fake_llm.CALLS) == 2 and found.task_for(config) in "\n".join(prompts)  # the two test answers


def test_bbh_leaves_out_a_target_that_is_no_label_and_says_so(home):
    dataset = preset.import_preset("preset:bbh:movie_recommendation", home / "data", bbh(home / "local"))
    assert "Monsters, Inc" not in {i.answer for i in dataset.train + dataset.test}
    assert any("1 row(s) left out" in line and "'Monsters, Inc'" in line for line in dataset.card.extra["summary"])
    assert dataset.card.seed == 0  # its one split, cut in two with a seed


def test_mab_shots_are_train_and_queries_are_test(home):
    dataset = preset.import_preset("preset:mab-ttl:banking77", home / "data", mab(home / "local"))
    assert [(i.id, i.question, i.answer) for i in dataset.train[:2]] == [
        ("shot-0", "How do I activate my card?", "3"), ("shot-1", "Is there an age limit?", "1")]
    assert [(i.id, i.answer) for i in dataset.test] == [("b0", "1"), ("b1", "0"), ("b2", "2")]
    assert "6 labeled shots" in dataset.card.extra["summary"][-1]


@pytest.mark.parametrize("source, write, words", [
    ("preset:bbh:word_sorting", bbh, r"^preset:bbh:word_sorting is not imported: free-form: its target is the sorted"),
    ("preset:mab-ttl:recsys_redial_full", mab, r"^preset:mab-ttl:recsys_redial_full is not imported: a recommendation"),
    ("preset:bbh", bbh, r"^preset:bbh needs a config, preset:bbh:CONFIG, one of boolean_expressions, "),
    ("preset:clinc150:full", clinc150, r"^preset:clinc150: no config 'full'; one of plus, small, imbalanced$"),
    ("preset:nosuch", bbh, r"^preset:nosuch: no such preset \(presets: banking77, bbh, "),
])
def test_refused_configs_are_one_line_naming_why(home, capsys, source, write, words):
    local = write(home / "local")
    with pytest.raises(DatasetError, match=words):
        preset.import_preset(source, home / "data", local)
    capsys.readouterr()  # the datasets library's progress bars
    assert main(["datasets", "import", source, "--from", str(local)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and not (home / "data").exists()


def test_a_missing_column_is_named_with_the_file(home, capsys):
    local = home / "rows.parquet"
    parquet(local, {"sentence": ["a message", "another"], "label": [0, 1]},
            datasets.Features({"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=BANKING)}))
    with pytest.raises(DatasetError, match=rf"^hf:{re.escape(str(local))}: no column 'text' for the question \("):
        preset.import_preset("preset:banking77", home / "data", local)
    copy = mab(home / "mab")
    parquet(copy / "data" / "Test_Time_Learning-00000-of-00001.parquet", {"questions": [["q"]], "answers": [[["1"]]]})
    capsys.readouterr()
    assert main(["datasets", "import", "preset:mab-ttl:banking77", "--from", str(copy)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after the datasets library's progress bars
    assert error.startswith(f"critique: error: hf:{copy}: no column 'context' (columns: questions, answers); ")


def test_class_numbers_without_their_names_are_refused(home):
    local = home / "train.jsonl"  # a JSON export keeps banking77's label numbers but not its class names
    datasets.Dataset.from_dict({"text": ["a message", "another"], "label": [0, 1]}).to_json(str(local))
    with pytest.raises(DatasetError, match=rf"^hf:{re.escape(str(local))} split 'train': column 'label' holds .*, "
                                           r"not class numbers with their names \(a ClassLabel\)"):
        preset.import_preset("preset:banking77", home / "data", local)


def test_a_preset_names_its_own_columns_and_from_goes_with_a_preset(home, capsys):
    assert main(["datasets", "import", "preset:banking77", "--label", "intent"]) == 2
    assert "a preset names its own columns and splits; --label go with hf: sources" in capsys.readouterr().err
    assert main(["datasets", "import", "hf:x/y", "--from", str(home)]) == 2
    assert "--from goes with a preset" in capsys.readouterr().err


def test_a_preset_folder_that_holds_another_dataset_is_refused(home):
    preset.import_preset("preset:banking77", home / "data", banking77(home / "local"))
    card = home / "data" / "banking77" / "dataset.json"
    card.write_text(json.dumps({**json.loads(card.read_text()), "source": "hf:someone/else"}))
    with pytest.raises(DatasetError, match="holds hf:someone/else, not preset:banking77"):
        resolve("preset:banking77")


def test_datasets_list_lists_the_presets_and_their_imports(home, capsys):
    preset.import_preset("preset:banking77", home / "data", banking77(home / "local"))
    assert main(["datasets", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert {f"preset:{name}" for name in preset.names()} <= set(rows)
    assert "configs plus, small, imbalanced" in rows["preset:clinc150"] and "CC-BY-3.0" in rows["preset:clinc150"]
    assert "(imported from preset:banking77; use --dataset preset:banking77)" in rows["banking77"]


def test_every_preset_file_is_complete_and_shipped():
    assert preset.names() == ["banking77", "bbh", "clinc150", "ddxplus", "mab-ttl"]
    for name in preset.names():
        found = preset.load(name)
        assert not set(found.refused) & set(found.configs) and found.default in (None, *found.configs)
        assert set(found.tasks) <= set(found.configs) and set(found.config_names) <= set(found.configs)
        assert found.folder(found.default) not in REGISTRY and found.schema and found.citation
    bbh_preset = preset.load("bbh")
    assert len(bbh_preset.configs) == 23 and set(bbh_preset.tasks) == set(bbh_preset.configs)
    assert set(bbh_preset.refused) == {"dyck_languages", "multistep_arithmetic_two", "object_counting", "word_sorting"}
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "presets/*.toml" in package_data["critique.datasets"]
