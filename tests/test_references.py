"""Published reference numbers beside ours (analysis.study.references): read from the cited files in
critique/datasets/references/, printed apart from Table 1 and never pooled with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from critique.analysis.study import references
from critique.datasets import preset

ACCURACY = [{"model": "local/m", "dataset": "banking77", "strategy": "zero_shot", "accuracy": 12.0, "n": 100},
            {"model": "local/m", "dataset": "banking77", "strategy": "EP_LABEL", "accuracy": 40.0, "n": 100},
            {"model": "local/m", "dataset": "mcr-gen", "strategy": "zero_shot", "accuracy": 25.2, "n": 250}]
ENTRY = {"dataset": "banking77", "model": "GPT-x", "method": "long-context agent", "metric": "accuracy",
         "value": 85.0, "items": 100, "source": "A et al. 2025, Table 3"}


def test_ours_and_theirs_side_by_side_per_dataset_never_combined():
    found = references.rows(ACCURACY, {"banking77": [ENTRY]})
    assert [(r["from"], r["method"], r["accuracy"]) for r in found] == [
        ("ours", "zero_shot", 12.0), ("ours", "EP_LABEL", 40.0), ("published", "long-context agent", 85.0)]
    assert {r["dataset"] for r in found} == {"banking77"}  # mcr-gen has no published numbers: not listed
    assert references.rows(ACCURACY, {}) == []


def test_an_entry_without_a_field_is_refused_naming_its_file(tmp_path):
    (tmp_path / "x.toml").write_text('[[reference]]\ndataset = "banking77"\nmodel = "m"\nvalue = "high"\n')
    with pytest.raises(ValueError, match=r"x.toml: reference 1: method, metric, value, source"):
        references.load(tmp_path)


def test_every_shipped_number_names_a_preset_dataset_its_source_and_the_row_it_was_read_from():
    folders = {found.folder(config) for name in preset.names() for found in [preset.load(name)]
               for config in (found.configs or (None,))}
    shipped = references.load()
    for dataset, entries in shipped.items():
        assert dataset in folders, f"{dataset}: no preset imports a dataset of that name"
        for entry in entries:
            assert entry["url"] and entry["quote"], entry
            assert 0 <= entry["value"] <= 100


def test_the_references_table_is_among_the_studys_tables(monkeypatch):
    from critique.analysis.study import cells as cells_module, tables

    full = [{**{name: 0.0 for name in cells_module.COLUMNS["accuracy"]}, **row, "errors": 0, "majority": None,
             "ci_low": None, "ci_high": None, "ci_method": None} for row in ACCURACY]
    cells = cells_module.Cells(full, [], [], [], [], [], [])
    monkeypatch.setattr(references, "load", lambda: {"banking77": [ENTRY]})
    made = tables.build(cells).table("references")
    assert not made.skipped and len(made.rows) == 3 and "never pooled" in made.note
    monkeypatch.setattr(references, "load", lambda: {})
    assert tables.build(cells).table("references").skipped
    assert Path(str(references.folder())).name == "references"
