"""A memory method is one small file (tests/toy_method.py) that touches no other module: a run takes its name
as a strategy, makes only the train stages it needs, logs its answers, and `critique tables` shows it."""

import json

from critique.base import rundir
from critique.cli import main


def test_a_method_in_one_file_runs_end_to_end_and_shows_in_the_tables(home, fake_llm, capsys):
    import toy_method

    out = home / "run"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "2",
                 "--strategies", f"zero_shot,{toy_method.NAME}", "--out", str(out), "--quiet"]) == 0
    calls = rundir.read_jsonl(out / rundir.CALLS)
    assert {c["stage"] for c in calls} == {"test"}  # it needs no train stage, so none was made
    mine = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["strategy"] == toy_method.NAME]
    assert len(mine) == 6 and all(len(p["retrieved"]) == 2 and len(p["retrieved_scores"]) == 2 for p in mine)
    assert any("Examples:\nQ: " in c["messages"][0]["content"] for c in calls if c["strategy"] == toy_method.NAME)
    capsys.readouterr()
    assert main(["tables", str(out), "--format", "json"]) == 0
    table1 = json.loads(capsys.readouterr().out)["table1"]
    assert {r["strategy"] for r in table1} == {"zero_shot", toy_method.NAME}
    assert all(r["n"] == 6 for r in table1)
    before = len(fake_llm.CALLS)
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "2",
                 "--strategies", f"zero_shot,{toy_method.NAME}", "--out", str(out), "--quiet"]) == 0
    assert len(fake_llm.CALLS) == before  # resumed: nothing asked again


def test_an_unknown_method_is_refused_and_a_method_may_not_take_a_studys_name():
    import pytest

    from critique.engine.methods import parse_strategies, register

    with pytest.raises(ValueError, match="unknown strategy nope"):
        parse_strategies("zero_shot,nope")

    class Impostor:
        name, needs, prompt = "EP_CRIT", None, None

    with pytest.raises(ValueError, match="one of the study's strategies"):
        register(Impostor())


def test_critique_runs_closing_table_is_critique_tables_table1_on_preference_data_with_a_failed_call(
        home, fake_llm, monkeypatch, capsys):
    failed = []

    def answer(prompt, options, props):
        if not failed and "Answer" in prompt and "critique" not in prompt.lower():
            failed.append(prompt)
            raise RuntimeError("the provider failed this one call")
        return None

    monkeypatch.setattr(fake_llm, "ANSWER", answer)
    out = home / "pref"
    rc = main(["run", "--dataset", "pref-gen", "--model", "fake/model", "--limit", "3", "--k", "1", "--retries", "0",
               "--strategies", "zero_shot,EP_LABEL", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert rc == 1 and failed  # one prediction ended in an error: the run says so
    shown, header = {}, None
    for line in printed.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "strategy":
            header = cells
        elif header and len(cells) == len(header) and cells[0] in ("zero_shot", "EP_LABEL"):
            shown[cells[0]] = dict(zip(header, cells))
    assert main(["tables", str(out), "--format", "json"]) == 0
    table1 = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)["table1"]}
    assert set(shown) == set(table1) == {"zero_shot", "EP_LABEL"}
    for strategy, row in table1.items():
        assert shown[strategy]["n"] == str(row["n"]) and shown[strategy]["accuracy %"] == f"{row['accuracy']:.1f}"
        assert shown[strategy]["errors"] == str(row["errors"])
    assert sum(r["errors"] for r in table1.values()) <= 1
