"""Every setting checked once (critique.base.config.setting_problem, run by RunConfig itself): the command
line, a study file (its top level and each [[models]] entry) and the Learner refuse the same bad value with the
same words, exit status 2 and nothing written."""

import pytest

from critique.base.config import RunConfig, SettingError
from critique.base.errors import UserError
from critique.cli import main
from critique.learner import Learner

STUDY = """
datasets = ["mcr-gen"]
limit = 3
out = "out"
"""

# (RunConfig field, CLI flag, value as the CLI gives it, TOML value, value as Python gives it, the words)
BAD = [
    ("parts", "--parts", "bogus", '"bogus"', "bogus", "parts must be one of full, local, global, not 'bogus'"),
    ("temperature", "--temperature", "nan", "nan", float("nan"), "temperature must be a finite number, not nan"),
    ("temperature", "--temperature", "3", "3.0", 3.0, "temperature must be at most 2.0, not 3.0"),
    ("timeout", "--timeout", "nan", "nan", float("nan"), "timeout must be a finite number, not nan"),
    ("api_base", "--api-base", "", '""', "", "api_base must not be empty"),
    ("k", "--k", "0", "0", 0, "k must be at least 1, not 0"),
]


@pytest.mark.parametrize("field, flag, cli, toml, python, words", BAD)
def test_the_same_bad_value_is_refused_alike_everywhere(home, fake_llm, capsys, field, flag, cli, toml, python,
                                                        words):
    problem = words.split(" ", 1)[1]
    with pytest.raises(SettingError, match="^" + words.replace("(", r"\(").replace(")", r"\)")):
        Learner("fake/model", out=home / "learner", **{field: python})
    if cli is not None:
        assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--out", str(home / "run"), "--quiet",
                     flag, cli]) == 2
        assert capsys.readouterr().err.strip() == f"critique: error: {flag} {problem}"
    study = home / "study.toml"
    if field != "api_base":  # a setting of the file's top level (api_base is one of each model)
        study.write_text(f'{STUDY}{field} = {toml}\n[[models]]\nname = "fake/model"\n')
        assert main(["study", str(study)]) == 2
        assert capsys.readouterr().err.strip() == f"critique: error: {study}: {field} {problem}"
    if field in ("temperature", "timeout", "api_base"):  # a per-model setting is held to the same bounds
        study.write_text(f'{STUDY}[[models]]\nname = "fake/model"\n{field} = {toml}\n')
        assert main(["study", str(study)]) == 2
        assert capsys.readouterr().err.strip() == f"critique: error: {study}: [[models]] #1.{field} {problem}"
    assert not (home / "run").exists() and not (home / "out").exists() and not (home / "learner").exists()


def test_a_replaced_config_is_checked_too():
    from dataclasses import replace

    config = RunConfig(dataset="d", model="m")
    with pytest.raises(SettingError, match="retrieval must be one of nearest, contrast"):
        replace(config, retrieval="farthest")
    assert isinstance(SettingError("k", "x"), UserError) and isinstance(SettingError("k", "x"), ValueError)


@pytest.mark.parametrize("text, words", [
    ('strategies = []\n[[models]]\nname = "fake/model"\n', "strategies: give at least one strategy"),
    ('out = ""\n[[models]]\nname = "fake/model"\n', "out must not be empty"),
    ('[[models]]\nname = "fake/model"\n[providers]\nfkae = 2\n',
     "providers.fkae is not the provider of any [[models]] entry (theirs: fake)"),
    ('[[models]]\nname = "fake/model"\n[[router.model_list]]\nmodel_name = "fake/model"\n'
     'litellm_params = { model = "fake/model", api_base = "http://127.0.0.1:9/v1", top_p = 0.5 }\n',
     "litellm_params.top_p is not a connection setting"),
])
def test_a_study_file_refuses_what_it_used_to_accept(home, fake_llm, capsys, text, words):
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen"]\nlimit = 3\n' + text)
    assert main(["study", str(study), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_a_study_file_with_a_byte_order_mark_is_read(home, fake_llm, capsys):
    study = home / "study.toml"
    study.write_bytes(b"\xef\xbb\xbf" + (STUDY + '[[models]]\nname = "fake/model"\n').encode())
    assert main(["study", str(study), "--dry-run"]) == 0, capsys.readouterr().err


def test_every_setting_of_runconfig_has_its_kind():
    from dataclasses import fields

    from critique.base.config import KINDS

    assert set(KINDS) == {f.name for f in fields(RunConfig)}  # a new setting is checked, or this fails
