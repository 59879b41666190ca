"""A study file's ``[credit]`` table: credit by deletion on each cell's plain run, then the memories pruned by it,
as the run directories `critique credit --prune` makes from the same run; resumed with no call, and a bad table
refused before any call. The scripted fake of tests/test_credit_learned.py: its bad entries' deletion helps."""

import shutil

import pytest

from critique.analysis.memory import credit as analysis
from critique.base import rundir
from critique.cli import main
from critique.experiments.source_run import SourceRun
from critique.experiments.study import credit_table
from critique.experiments.study.file import check, load
from critique.experiments.study.plan import plan

from test_credit_learned import BAD, dataset, scripted

N = len(BAD)
CREDIT = f'[credit]\non = "train"\nprune = "lowest:{N},estimate:{N}"\n'


def study_file(home, credit: str = CREDIT, strategies: str = '"EP_CRIT", "EP+SEM_CRIT"', settings: str = ""):
    data = home / "animals"
    if not data.exists():
        dataset(data)
    path = home / "study.toml"
    path.write_text(f'out = "runs"\ndatasets = ["{data}"]\nstrategies = [{strategies}]\nk = 3\njobs = 1\n'
                    f'{settings}\n[[models]]\nname = "fake/m"\n\n{credit}')
    return path


def _plain_run(folder):
    (run,) = [d for d in folder.iterdir() if SourceRun(d).is_run() and SourceRun(d).manifest.get("probe") is None]
    return run


def _rows(prune_dir) -> list[tuple]:
    return sorted((r["rule"], r["strategy"], r["removed"], r["accuracy"]) for r in analysis.prune_rows(prune_dir))


def test_a_study_credits_and_prunes_its_plain_run_as_the_command_does(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    path = study_file(home)
    study = load(path)
    (cell,) = plan(study, check(study))
    assert [t.label for t in cell.tasks] == ["run", "credit-train", "prune"]
    assert "the plain run has not completed" in credit_table.waiting(cell.tasks[1])  # never before its source
    assert main(["study", str(path)]) == 0
    assert credit_table.waiting(cell.tasks[1]) is None and credit_table.waiting(cell.tasks[2]) is None
    runs = home / "runs"
    plain = _plain_run(runs)
    credit_dir = runs / f"{plain.name}__credit-EP_CRIT-train"
    prune_dir = runs / f"{credit_dir.name}__prune"
    assert rundir.read_manifest(credit_dir)["probe"]["source_run_id"] == rundir.read_manifest(plain)["run_id"]
    studied = _rows(prune_dir)
    assert ("estimate:4", "EP_CRIT", N, 1.0) in studied and ("lowest:4", "EP_CRIT", N, 1.0) in studied

    by_hand = home / "by-hand" / plain.name  # the same plain run, credited and pruned by the command
    shutil.copytree(plain, by_hand)
    assert main(["credit", str(by_hand), "--on", "train", "--prune", f"lowest:{N},estimate:{N}", "--quiet"]) == 0
    assert _rows(by_hand.parent / f"{by_hand.name}__credit-EP_CRIT-train__prune") == studied
    credited = analysis.summary(credit_dir)["rows"]
    assert credited == analysis.summary(by_hand.parent / f"{by_hand.name}__credit-EP_CRIT-train")["rows"]

    capsys.readouterr()
    assert main(["study", str(path), "--dry-run"]) == 0
    assert "credit-train (complete), prune (complete)" in capsys.readouterr().out
    assert main(["study", str(path)]) == 0
    assert "0 LLM calls made" in capsys.readouterr().out

    study_file(home, CREDIT.replace(f'estimate:{N}"', f'estimate:{N},random:2"'))
    assert main(["study", str(path), "--dry-run"]) == 0
    assert "prune (partial)" in capsys.readouterr().out  # a rule its run has no answers for


@pytest.mark.parametrize("credit, strategies, message", [
    ('[credit]\non = "test"\nprune = "lowest:2"\n', '"EP_CRIT"', "credit.prune: pruning needs credit on train"),
    ('[credit]\nstrategy = "SEM_CRIT"\n', '"EP_CRIT"', "credit.strategy: one of EP_CRIT, EP+SEM_CRIT"),
    ('[credit]\non = "test"\n', '"EP+SEM_CRIT"', "credit on test reads the plain run's EP_CRIT predictions"),
    ('[credit]\nprune = "lowest:0"\n', '"EP_CRIT"', "credit.prune: 'lowest:0' is not toxic"),
    ("[credit]\n", '"zero_shot"', "the plain run's strategies make no critique stage"),
    ('[credit]\nstrategy = "EP+SEM_CRIT"\n', '"EP_CRIT"', "make no summary stage"),
    ('[credit]\nnull = -1\n', '"EP_CRIT"', "credit.null: must be at least 0"),
    ('[credit]\nprune = "lowest:2"\nseeds = 0\n', '"EP_CRIT"', "credit.prune: seeds must be at least 1"),
    ('[credit]\nwhat = 1\n', '"EP_CRIT"', "unknown field credit.'what'"),
    ('[credit]\nseeds = "3"\n', '"EP_CRIT"', "credit.seeds must be a whole number"),
])
def test_a_bad_credit_table_is_one_error_before_any_call(home, fake_llm, capsys, credit, strategies, message):
    path = study_file(home, credit, strategies)
    assert main(["study", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert fake_llm.CALLS == [] and not (home / "runs").exists()


@pytest.mark.parametrize("settings", ["gate = 0.5", "inject_budget = 300", 'retrieval = "contrast"'])
def test_credit_is_refused_beside_a_setting_whose_prompts_it_cannot_rebuild(home, fake_llm, capsys, settings):
    assert main(["study", str(study_file(home, settings=settings))]) == 2
    assert "credit rebuilds prompts from the K nearest entries only" in capsys.readouterr().err
    assert fake_llm.CALLS == []


def _studied(home, fake_llm, capsys, credit: str):
    """The study file of ``credit`` run once; its path and its credit run, the calls and output cleared."""
    path = study_file(home, credit)
    assert main(["study", str(path)]) == 0
    fake_llm.CALLS.clear()
    capsys.readouterr()
    return path, home / "runs" / f"{_plain_run(home / 'runs').name}__credit-EP_CRIT-train"


def test_a_credit_run_made_with_other_settings_is_named_not_resumed(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    path, credit_dir = _studied(home, fake_llm, capsys, '[credit]\non = "train"\n')
    made = rundir.read_manifest(credit_dir)
    study_file(home, '[credit]\non = "train"\nnull = 2\n')
    assert main(["study", str(path)]) != 0
    said = capsys.readouterr().out
    assert f"credit-train: not run: {credit_dir.name} was made with null 0 (now 2); set [credit] as it was" in said
    assert "see the error field" not in said  # not a call that failed: nothing in the logs to look at
    assert fake_llm.CALLS == [] and rundir.read_manifest(credit_dir) == made
    assert main(["study", str(path), "--dry-run"]) == 0
    assert "credit-train (partial)" in capsys.readouterr().out


def test_a_pruning_run_of_a_credit_run_made_anew_is_named_not_resumed(home, fake_llm, monkeypatch, capsys):
    import json

    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    path, credit_dir = _studied(home, fake_llm, capsys, '[credit]\non = "train"\nprune = "lowest:1"\n')
    manifest = rundir.read_manifest(credit_dir)
    (credit_dir / rundir.MANIFEST).write_text(json.dumps({**manifest, "run_id": "made-anew"}))
    assert main(["study", str(path)]) != 0
    said = capsys.readouterr().out
    assert (f"prune: not run: {credit_dir.name}__prune was made with credit_run_id {manifest['run_id']!r} (now "
            "'made-anew'); a run it reads was made anew since: move this run directory away") in said
    assert fake_llm.CALLS == []


def test_pruning_with_no_held_out_question_is_named_before_the_credit_runs_calls(home, fake_llm, monkeypatch,
                                                                                capsys):
    from critique.experiments.credit.deletion import half_of

    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    path = study_file(home, '[credit]\non = "test-half"\nprune = "lowest:1"\n', settings="seed = 5")
    assert main(["study", str(path)]) != 0
    plain = _plain_run(home / "runs")
    tests = {p["item_id"] for p in SourceRun(plain).predictions("test")}
    assert tests and all(half_of(None, item, 5) == 0 for item in tests)  # seed 5: none held out from credit
    said = capsys.readouterr().out
    assert "credit-test-half: not run: prune has no held-out question to score the pruned memories on" in said
    assert "prune: not run: prune has no held-out question" in said and "rerun the study once" not in said
    assert sorted(d.name for d in (home / "runs").iterdir()) == [plain.name]  # no credit or pruning run made


def test_a_cells_line_points_to_the_logs_only_for_the_tasks_whose_calls_failed():
    from critique.experiments.study.execute import cell_errors

    said = cell_errors({"prune": "not run: the credit run has not completed"},
                       {"run": "2 calls and 1 predictions ended in an error"})
    assert said == ("prune: not run: the credit run has not completed; run: 2 calls and 1 predictions ended in an "
                    "error (see the error field of their calls.jsonl and predictions.jsonl); rerun the study to retry "
                    "them")
    assert "see the error field" not in cell_errors({"prune": "not run: the credit run has not completed"}, {})
