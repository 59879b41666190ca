"""docs/results.md's figures of the memory papers' experiments on the model that learns (admission at write time,
past outcomes against procedures: logs-memory/) are what `critique tables` prints from the shipped logs today, with
the study's admit-all runs (logs/) beside the admitting ones."""

from __future__ import annotations

import pytest

from shipped import LOGS, ROOT, command_json, results

MEMORY = ROOT / "logs-memory"
QWEN = "local/qwen2.5-coder-0.5b"
TWINS = [LOGS / f"{d}__local_qwen2.5-coder-0.5b" for d in ("mcr-gen", "pref-gen")]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict:
    return command_json(tmp_path_factory.mktemp("memory"), ["tables", str(MEMORY), *map(str, TWINS)])


def _p(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def _points(value) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _mde(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def test_the_admission_rows(tables):
    rows = [r for r in tables["admission"] if r["model"] == QWEN]
    assert {r["dataset"] for r in rows} == {"mcr-gen", "pref-gen"}
    for r in rows:
        assert r["twin"] == str(LOGS / f"{r['dataset']}__local_qwen2.5-coder-0.5b")  # the study's admit-all run
        line = (f"| {r['dataset']} | {r['critiques']} | {r['rejected']} | {r['rejected_share']:.1f} | "
                f"{r['accuracy']:.1f} | {r['admit_all']:.1f} | {_points(r['vs_admit_all'])} | {r['wins']} / "
                f"{r['losses']} | {_p(r['p'])} | {_mde(r['mde'])} |")
        assert line in results(), line


def test_the_shipped_runs_are_complete(tmp_path, capsys):
    import shutil

    from critique.cli import main

    shutil.copytree(MEMORY, tmp_path / "memory")
    assert main(["study", str(tmp_path / "memory" / "admission-qwen.toml"), "--dry-run"]) == 0
    assert "2 complete, 0 to run" in capsys.readouterr().out
