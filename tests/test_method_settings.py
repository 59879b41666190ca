"""A memory method's settings of its own (critique.engine.method_settings): declared in its module, given with
--method-settings or a study file's method_settings, checked before anything is written, part of the run's
identity and of its folder's name, and read by the method (ACE's epochs double its offline stage's calls)."""

import pytest

from critique.base import rundir
from critique.base.config import RunConfig, SettingError
from critique.cli import main
from critique.runner import run_name


def _run(out, *more):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--k", "2", "--strategies",
                 "zero_shot,ace", "--out", str(out), "--no-cache", "--quiet", *more])


def _calls(out, stage):
    return [c for c in rundir.read_jsonl(out / rundir.CALLS) if c["stage"] == stage]


def test_a_setting_changes_what_the_method_does_and_the_identity_of_the_run(home, fake_llm, capsys):
    one, two = home / "one", home / "two"
    assert _run(one) == 0 and _run(two, "--method-settings", "ace.epochs=2") == 0
    assert len(_calls(two, "ace_generate")) > len(_calls(one, "ace_generate"))
    assert "2 epochs" in capsys.readouterr().err  # the cost line counts by the setting
    assert rundir.read_manifest(two)["config"]["method_settings"] == "ace.epochs=2"
    assert rundir.read_manifest(one)["config"]["method_settings"] is None
    assert _run(one, "--method-settings", "ace.epochs=2") == 2  # another identity: not resumed into this folder
    assert "holds a run with method_settings=None, not 'ace.epochs=2'" in capsys.readouterr().err
    config = RunConfig(dataset="mcr-gen", model="fake/model", method_settings="ace.rounds=1, ace.epochs=2")
    assert config.method_settings == "ace.epochs=2,ace.rounds=1"  # one written form
    assert run_name(config) == "mcr-gen__fake_model__settings-ace.epochs_2_ace.rounds_1"


@pytest.mark.parametrize("given, said", [
    ("ace.nope=2", "ace has no setting 'nope' (its settings: epochs, rounds)"),
    ("ace.epochs=0", "--method-settings ace.epochs must be at least 1, not 0"),
    ("ace.epochs=two", "--method-settings ace.epochs must be int, not 'two'"),
    ("nothing.epochs=2", "no memory method is named 'nothing'"),
    ("ace:nolabel.rounds=2", "ace:nolabel has no setting 'rounds' (its settings: epochs)"),
])
def test_a_setting_no_method_declares_or_takes_is_refused_before_anything_is_written(home, fake_llm, capsys,
                                                                                      given, said):
    out = home / "refused"
    assert _run(out, "--method-settings", given) == 2
    assert said in capsys.readouterr().err and not out.exists() and not fake_llm.CALLS


def test_a_malformed_setting_is_refused_by_the_config():
    with pytest.raises(SettingError, match="must be METHOD.KEY=VALUE"):
        RunConfig(dataset="d", model="m", method_settings="ace=2")
