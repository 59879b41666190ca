"""Gate thresholds chosen on the train split alone (critique.experiments.gate_choice): quantiles of each train
question's similarity to its nearest other train question of its pool, never a test question read; recorded
in each gate run's manifest (ablation.chosen), from the command line and a study file alike."""

import json

import numpy as np
import pytest

from critique.base import rundir
from critique.base.errors import UserError
from critique.cli import main
from critique.datasets.splits import Item
from critique.experiments import gate_choice

RUN = ["--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--quiet", "--no-cache"]


class Vectors:
    """An encoder that gives each text its own vector, and records what it was asked to encode."""

    def __init__(self, table: dict[str, list[float]]):
        self.table, self.asked = table, []

    def encode(self, texts):
        self.asked.extend(texts)
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_the_statistic_is_the_nearest_other_question_of_the_same_pool():
    table = {"a": [1, 0], "b": [1, 1], "c": [0, 1], "d": [1, 0], "e": [-1, 0]}
    train = [Item("1", "a", "1", "u"), Item("2", "b", "1", "u"), Item("3", "c", "1", "u"),
             Item("4", "d", "1", "v"), Item("5", "e", "1", "v"), Item("6", "a", "1", "w")]  # w: alone, left out
    found = gate_choice.nearest_other(train, Vectors(table))
    half = 1 / np.sqrt(2)
    assert found == pytest.approx([half, half, half, -1.0, -1.0])  # never itself; d and e only see each other
    choices = gate_choice.choose(train, Vectors(table), [0.5])
    assert choices == [{"value": round(half, 3), "chosen": {"split": "train", "quantile": 0.5, "questions": 5,
                                                            "statistic": gate_choice.STATISTIC}}]
    with pytest.raises(ValueError, match="quantiles must be numbers in"):
        gate_choice.choose(train, Vectors(table), [1.0])
    with pytest.raises(ValueError, match="no pool of the train split holds two questions"):
        gate_choice.choose(train[-1:], Vectors(table), [0.5])


def test_proposing_thresholds_reads_the_train_split_only(home, monkeypatch, capsys):
    from critique.datasets.registry import resolve
    from critique.engine.memory import embed

    asked = []

    class Recording(embed.Encoder):
        def encode(self, texts):
            asked.extend(texts)
            return super().encode(texts)

    monkeypatch.setattr(embed, "Encoder", Recording)
    assert main(["ablate", "gate", "--quantiles", "0.25,0.75", "--propose", *RUN]) == 0
    dataset = resolve("mcr-gen").limited(6)
    assert sorted(asked) == sorted(i.question for i in dataset.train)
    assert not set(asked) & {i.question for i in dataset.test}
    printed = capsys.readouterr().out
    assert "gate thresholds from the train split (6 questions" in printed and "quantile 0.25: " in printed
    assert not (home / "runs").exists()  # proposed, nothing run


def test_a_sweep_from_quantiles_records_how_each_threshold_was_chosen(home, fake_llm, capsys):
    assert main(["ablate", "gate", "--quantiles", "0.5", *RUN, "--k", "3", "--out", str(home / "runs")]) == 0
    value = float(capsys.readouterr().out.split("quantile 0.5: ")[1].split()[0])
    (path,) = sorted((home / "runs").iterdir())
    manifest = json.loads((path / rundir.MANIFEST).read_text())
    assert manifest["ablation"] == {"name": "gate", "value": value, "chosen": {
        "split": "train", "quantile": 0.5, "questions": 6, "statistic": gate_choice.STATISTIC}}
    assert manifest["config"]["gate"] == value and manifest["status"] == "complete"
    fake_llm.CALLS.clear()
    assert main(["ablate", "gate", "--quantiles", "0.5", *RUN, "--k", "3", "--out", str(home / "runs")]) == 0
    assert fake_llm.CALLS == []  # the same thresholds again: the same run, resumed
    with pytest.raises(SystemExit) as refused:  # argparse: one or the other
        main(["ablate", "gate", "--quantiles", "0.5", "--values", "0.3", *RUN])
    assert refused.value.code == 2
    assert main(["ablate", "gate", "--quantiles", "1.5", *RUN]) == 2
    assert main(["ablate", "gate", "--propose", *RUN]) == 2


def test_a_study_file_chooses_the_gate_from_quantiles(home):
    from critique.experiments.study.file import load
    from critique.experiments.study.plan import plan

    head = 'datasets = ["mcr-gen"]\nlimit = 6\nstrategies = ["EP_CRIT"]\nout = "out"\n[[models]]\nname = "fake/model"\n'
    (home / "s.toml").write_text(head + "[ablations.gate]\nquantiles = [0.25, 0.75]\n")
    (cell,) = plan(load(home / "s.toml"), {"mcr-gen": "x"})
    gates = [t for t in cell.tasks if t.ablation]
    assert [t.ablation["chosen"]["quantile"] for t in gates] == [0.25, 0.75]
    assert all(t.config.gate == t.ablation["value"] and t.out.name.endswith(f"gate-{t.ablation['value']:g}")
               for t in gates)
    for bad, message in (("[ablations.gate]\nquantiles = [0.5]\nvalues = [0.5]\n", "values or quantiles"),
                         ("[ablations.gate]\nquantiles = [2]\n", "quantiles must be numbers in"),
                         ("[ablations.k]\nquantiles = [0.5]\n", "only the gate ablation")):
        (home / "bad.toml").write_text(head + bad)
        with pytest.raises(UserError, match=message):
            load(home / "bad.toml")
