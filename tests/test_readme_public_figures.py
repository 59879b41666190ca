"""The README's public slice (BIG-Bench Hard's boolean_expressions, generated in its schema: logs-public/) is what
`critique tables logs-public` prints today: every row of its table beside the published numbers, the paired test
its sentence quotes, and the calls the run made; and the shipped run resumes with no call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from critique.base import rundir
from critique.cli import main

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "logs-public"
RUN = PUBLIC / "preset_bbh_boolean_expressions__local_qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def tables():
    import io
    from contextlib import redirect_stdout

    from critique.analysis.__main__ import main as analysis_main

    out = io.StringIO()
    with redirect_stdout(out):
        assert analysis_main(["tables", str(PUBLIC), "--inference", "--format", "json"]) == 0
    return json.loads(out.getvalue())


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_row_beside_the_published_numbers_is_the_tables(tables):
    rows = tables["references"]
    assert {r["from"] for r in rows} == {"ours", "published"} and len([r for r in rows if r["from"] == "ours"]) == 6
    for r in rows:
        items = "-" if r["items"] is None else r["items"]
        line = f"| {r['from']} | {r['model']} | {r['method']} | {r['accuracy']:.1f} | {items} |"
        assert line in readme(), line


def test_the_paired_test_the_sentence_quotes(tables):
    sem = next(r for r in tables["inference"]["paired"] if r["strategy"] == "SEM_CRIT" and r["baseline"] == "zero_shot")
    said = (f"SEM_CRIT by {-sem['diff']:.1f} points ({sem['discordant_wins']} items won and "
            f"{sem['discordant_losses']} lost, exact McNemar\np = {sem['p_mcnemar']:.2g}, "
            f"{sem['p_holm']:.2g} after Holm")
    assert said in readme()
    zero = next(r["accuracy"] for r in tables["table1"] if r["strategy"] == "zero_shot")
    assert all(r["accuracy"] < zero for r in tables["table1"] if r["strategy"] != "zero_shot")  # "fewer ... than"


def test_the_calls_and_the_slice_size():
    calls = len(rundir.read_jsonl(RUN / rundir.CALLS))
    manifest = json.loads((RUN / rundir.MANIFEST).read_text())
    assert f"`logs-public/bbh-boolean-qwen.toml`: {calls} calls" in readme()
    assert (manifest["dataset"]["n_train"], manifest["dataset"]["n_test"]) == (50, 50)


def test_the_shipped_run_resumes_with_no_call(tmp_path, capsys):
    import shutil

    shutil.copytree(PUBLIC, tmp_path / "public")
    assert main(["study", str(tmp_path / "public" / "bbh-boolean-qwen.toml"), "--dry-run"]) == 0
    assert "1 complete, 0 to run" in capsys.readouterr().out
