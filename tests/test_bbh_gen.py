"""BIG-Bench Hard's boolean_expressions generated in its schema (critique.datasets.bbh_gen): every expression has
BBH's 8 tokens and the value Python gives it, the rows are balanced and seeded, and the slice shipped in
logs-public/ is what the generator and the bbh preset make from it today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from critique.datasets import bbh_gen

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "logs-public" / "data"


def test_every_expression_has_eight_tokens_and_the_value_python_gives_it():
    found = bbh_gen.expressions(bbh_gen.TOKENS)
    assert len(found) == len(set(found)) > 1000
    for expression in found:
        assert len(expression.split()) == 8
        assert bbh_gen.truth(expression) is eval(expression, {"__builtins__": {}})  # the oracle: Python itself


def test_the_grammar_holds_the_rows_bbh_shows():
    found = set(bbh_gen.expressions(8))
    for shown in ("not ( True ) and ( True )", "True and not not ( not False )", "not True or ( False and True )"):
        assert shown in found


def test_truth_refuses_anything_but_the_grammar():
    with pytest.raises(ValueError, match="not a Boolean expression"):
        bbh_gen.truth("__import__('os') or True")


def test_rows_are_balanced_seeded_and_in_the_sets_schema():
    rows = bbh_gen.rows(40, seed=3)
    assert rows == bbh_gen.rows(40, seed=3) != bbh_gen.rows(40, seed=4)
    assert [set(r) for r in rows] == [{"input", "target"}] * 40
    assert sum(r["target"] == "True" for r in rows) == 20
    assert all(r["input"].endswith(" is") for r in rows)
    assert len({r["input"] for r in rows}) == 40
    with pytest.raises(ValueError, match="even"):
        bbh_gen.rows(3)


def test_the_shipped_rows_are_what_the_generator_writes(tmp_path):
    written = bbh_gen.write(tmp_path / "rows.jsonl")
    assert written.read_bytes() == (SHIPPED / "boolean_expressions.jsonl").read_bytes()


def test_the_shipped_dataset_is_what_the_preset_imports_from_them(tmp_path):
    pytest.importorskip("datasets")
    from critique.datasets.preset import import_preset

    fresh = import_preset("preset:bbh:boolean_expressions", tmp_path, SHIPPED / "boolean_expressions.jsonl").path
    shipped = SHIPPED / "bbh-boolean_expressions"
    for split in ("train.jsonl", "test.jsonl"):
        assert (fresh / split).read_bytes() == (shipped / split).read_bytes()
    card = json.loads((shipped / "dataset.json").read_text())
    assert card["source"] == "preset:bbh:boolean_expressions" and card["license"] == "MIT"
