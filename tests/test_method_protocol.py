"""A new memory method is one file written against critique.engine.protocols (tests/toy_learning_method.py): the
engine runs its offline stage and saves the memory it returns, the cost line counts its calls to learn, credit
deletes each note it showed, and a changed version of it does not resume its old answers."""

import json

from critique.base import rundir
from critique.base.cost import PREFIX
from critique.cli import main


def _run(out, *more):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "2", "--strategies",
                 "zero_shot,hints", "--out", str(out), "--no-cache", *more])


def _cost(err: str) -> str:
    (line,) = [x for x in err.splitlines() if x.startswith(f"{PREFIX}at most")]
    return line


def test_a_method_in_one_file_learns_is_counted_credited_and_versioned(home, fake_llm, capsys, monkeypatch):
    import toy_learning_method as toy

    out = home / "run"
    assert _run(out, "--quiet") == 0
    line = _cost(capsys.readouterr().err)
    assert "+ 6 calls of hints to learn (1 per train item)" in line
    assert int(line.split("at most ")[1].split(" calls")[0]) >= len(fake_llm.CALLS)  # a bound of what was made
    saved = json.loads((out / rundir.MEMORY / "hints.json").read_text())
    assert saved["method"] == "hints" and sum(len(p["notes"]) for p in saved["pools"].values()) == 6
    mine = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["strategy"] == "hints"]
    assert len(mine) == 6 and all(len(p["retrieved"]) == 2 for p in mine)
    assert rundir.read_manifest(out)["method_versions"] == {"zero_shot": 1, "hints": 1}

    fake_llm.CALLS.clear()
    assert main(["credit", str(out), "--strategy", "hints", "--on", "test", "--quiet"]) == 0
    credited = [p for p in rundir.read_jsonl(out.parent / "run__credit-hints-test" / rundir.PREDICTIONS)
                if p["strategy"].startswith("without:")]
    assert len(credited) == 12  # each of the 6 prompts without each of the 2 hints it showed
    capsys.readouterr()
    assert main(["credit", str(out), "--strategy", "hints", "--on", "test", "--report"]) == 0
    assert "inert" in capsys.readouterr().out

    from critique.experiments.study.plan import same_versions

    assert same_versions(rundir.read_manifest(out), ["zero_shot", "hints"])
    monkeypatch.setattr(toy.Hints, "version", 2)
    assert _run(out, "--quiet") == 2
    assert "holds hints made by version 1 of the method, not version 2" in capsys.readouterr().err
    assert not same_versions(rundir.read_manifest(out), ["hints"])  # a study takes the cell for not done
    assert main(["credit", str(out), "--strategy", "hints", "--on", "test-half", "--quiet"]) == 2
    assert "made by version 1 of the method, not version 2" in capsys.readouterr().err
