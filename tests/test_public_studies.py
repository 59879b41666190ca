"""The study files of the public sets (examples/public/): each loads as a study, names presets and configs that
exist, and runs the baselines the memory is meant to beat (zero_shot, EP_LABEL, many_shot) beside the critique
strategies."""

from __future__ import annotations

from pathlib import Path

import pytest

from critique.datasets import preset
from critique.experiments.study.file import load

FILES = sorted((Path(__file__).resolve().parent.parent / "examples" / "public").glob("*.toml"))


def test_there_is_a_study_file_per_public_set():
    assert {f.stem for f in FILES} == set(preset.names())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_public_study_file_loads_and_names_presets_that_exist(path):
    study = load(path)
    assert {"zero_shot", "EP_LABEL", "many_shot", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"} <= set(study.strategies)
    for name in study.datasets:
        assert preset.is_preset(name)
        found, config = preset.find(name)  # an unknown preset or config is refused here
        assert found.name == path.stem
