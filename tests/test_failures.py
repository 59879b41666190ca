"""Runs that cannot give the model's answers say so: a study cell with errored calls is not complete (the study
exits non-zero naming it, a rerun retries it), a run whose first call fails with an error no retry can cure stops
at once, a run whose calls keep failing alike stops, and a memory left empty is a clear state, not a retry loop."""

import json
from types import SimpleNamespace

import pytest

from critique.base import rundir
from critique.cli import main
from critique.llm.client import FAILURES_IN_A_ROW

STUDY = """
datasets = ["mcr-gen"]
limit = 3
k = 2
retries = 0
strategies = ["zero_shot"]
out = "out"

[[models]]
name = "fake/model"
"""


def test_a_study_cell_whose_calls_failed_is_not_complete_and_a_rerun_retries_it(home, fake_llm, monkeypatch,
                                                                                 capsys):
    study = home / "study.toml"
    study.write_text(STUDY)
    monkeypatch.setenv("FAKE_LLM_FAIL", "answer")  # every answer fails (a 503 each time, say)
    assert main(["study", str(study)]) == 1
    out = capsys.readouterr().out
    assert "mcr-gen x fake/model" in out and "run: 3 calls and 3 predictions ended in an error" in out, out
    assert "1 with errors" in out
    run = home / "out" / "mcr-gen__fake_model"
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    assert manifest["status"] == "errors" and manifest["errors"] == {"calls": 3, "predictions": 3}
    assert main(["study", str(study), "--dry-run"]) == 0
    assert "run (partial)" in capsys.readouterr().out  # not taken for complete
    monkeypatch.delenv("FAKE_LLM_FAIL")
    before = len(fake_llm.CALLS)
    assert main(["study", str(study)]) == 0
    assert len(fake_llm.CALLS) - before == 3  # exactly the failed ones asked again
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    assert manifest["status"] == "complete" and manifest["errors"] == {"calls": 0, "predictions": 0}


def test_a_first_call_refused_for_its_credentials_stops_the_run_at_once(home, monkeypatch, capsys):
    from faults.server import FaultServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a keyless server passes the check: litellm refuses
    with FaultServer() as server:
        rc = main(["run", "--dataset", "mcr-gen", "--model", "openai/served", "--api-base", server.url, "--limit", "3",
                   "--k", "1", "--concurrency", "1", "--out", str(home / "run"), "--quiet"])
        assert server.log == []  # litellm refused before sending
    err = capsys.readouterr().err.strip().splitlines()
    unknown = [line for line in err if line.startswith("critique: warning: the context window of openai/served")]
    err = [line for line in err if line not in unknown]
    assert rc == 1 and len(unknown) == 1 and len(err) == 3, err  # the cost line, its dollars, then the reason
    assert "the first call failed with an error no retry can cure" in err[-1] and "Missing credentials" in err[-1]
    assert "check the provider's key" in err[-1]
    calls = rundir.read_jsonl(home / "run" / rundir.CALLS)
    assert len(calls) == 1 and calls[0]["retries"] == 0  # not retried five times, and nothing more asked
    assert json.loads((home / "run" / rundir.MANIFEST).read_text())["status"] == "running"


def test_a_run_whose_calls_keep_failing_alike_stops(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_FAIL", "answer")
    rc = main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "15", "--retries", "0",
               "--concurrency", "1", "--strategies", "zero_shot", "--out", str(home / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and f"{FAILURES_IN_A_ROW} calls in a row failed, with the same error" in err, err
    assert len(rundir.read_jsonl(home / "run" / rundir.CALLS)) == FAILURES_IN_A_ROW  # of the 15 train answers


def test_a_run_whose_calls_fail_with_errors_that_differ_stops_too(home, monkeypatch, capsys):
    """An outage answers 429, 500, 503 and bodies that are no reply by turns: it is stopped as one error is."""
    from faults.server import FaultServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-outage-test-0000")
    with FaultServer(doom_rate=1.0) as server:
        rc = main(["run", "--dataset", "mcr-gen", "--model", "openai/served", "--api-base", server.url, "--limit", "40",
                   "--retries", "0", "--concurrency", "1", "--strategies", "zero_shot,EP_CRIT",
                   "--out", str(home / "run"), "--quiet"])
        kinds = {outcome for outcome in server.outcomes if outcome != "ok"}
    err = capsys.readouterr().err
    assert rc == 1 and f"{FAILURES_IN_A_ROW} calls in a row failed, with" in err and "different errors" in err, err
    assert len(kinds) > 1  # the errors differed
    assert len(rundir.read_jsonl(home / "run" / rundir.CALLS)) == FAILURES_IN_A_ROW  # not the 40 train answers


def test_an_empty_memory_is_said_and_answered_memory_free_and_a_rerun_makes_no_call(home, fake_llm, monkeypatch,
                                                                                   capsys):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "1,2,3,4")  # every critique asserts another label: all dropped
    argv = ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--k", "2", "--on-mismatch",
            "drop", "--out", str(home / "run"), "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "4 of 4 critiques parsed and 0 entered memory" in err
    assert "no critique in memory for pool all" in err
    predictions = rundir.latest(rundir.read_jsonl(home / "run" / rundir.PREDICTIONS))
    tests = {(p["strategy"], p["item_id"]): p for p in predictions if p["stage"] == "test"}
    assert not any(p["error"] for p in tests.values())
    for (strategy, item), p in tests.items():  # the memory-free prompt: zero_shot's very request
        if strategy != "EP_LABEL":  # its examples are the train labels, which it has
            assert p["request_hash"] == tests[("zero_shot", item)]["request_hash"]
    before = len(fake_llm.CALLS)
    assert main(argv) == 0 and len(fake_llm.CALLS) == before


def test_table2_leaves_out_a_strategy_whose_predictions_errored():
    from critique.analysis.study.points import study_points

    rows = [{"model": "m", "dataset": "d", "strategy": "zero_shot", "accuracy": 0.0, "n": 10, "errors": 10},
            {"model": "m", "dataset": "d", "strategy": "EP+SEM_CRIT", "accuracy": 0.0, "n": 10, "errors": 10},
            {"model": "m", "dataset": "e", "strategy": "zero_shot", "accuracy": 50.0, "n": 10, "errors": 0}]
    points, notes = study_points(SimpleNamespace(accuracy=rows, labels={}))
    assert points == {("m", "e"): {"zero_shot": 50.0}}  # no all-error point, so no tie
    assert any("m / d: left out, all 20 of its predictions ended in an error" in n for n in notes)


@pytest.mark.parametrize("text, hint", [
    ("AuthenticationError: litellm.AuthenticationError: bad key", "check the provider's key"),
    ("NotFoundError: model nope does not exist", "check the model name"),
    ("InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`", "check the provider"),
    ("RateLimitError: slow down", None), ("InternalServerError: overloaded", None),
])
def test_which_errors_no_retry_can_cure(text, hint):
    from critique.llm.attempt import incurable

    found = incurable(text)
    assert (found is None) if hint is None else hint in found


def test_a_read_only_run_directory_is_one_line_not_a_traceback(home, fake_llm, tmp_path):
    """Run as a user who may not write the run directory (as root: the user nobody, through setpriv)."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    argv = ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "2", "--k", "1", "--strategies",
            "zero_shot", "--out", str(home / "run"), "--quiet"]
    assert main(argv) == 0
    for path in [home, *home.rglob("*")]:  # everyone may read; the cache stays writable, the run does not
        path.chmod(0o777 if "cache" in path.relative_to(home.parent).parts else 0o755 if path.is_dir() else 0o644)
    (home / "run").chmod(0o555)
    for parent in home.parents:  # pytest's own folders above the test's (0700) may be entered
        if parent == Path(tempfile.gettempdir()):
            break
        parent.chmod(0o755)
    drop = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no user to whom the directory is read-only")
        drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    fake = Path(__file__).with_name("fake_llm.py")
    done = subprocess.run([*drop, sys.executable, str(fake), *argv], capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)}, cwd=str(home))
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert err[-1].startswith(f"critique: error: {home / 'run'} cannot be written"), err
