"""One writer per run directory; and the API key goes nowhere."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from critique.base import rundir
from faults.conftest import LIMIT, SECRET
from faults.harness import duplicates, lines, pkey

TOTAL_CALLS = 7 * LIMIT + 1


def test_a_second_process_on_the_same_run_directory_is_refused_and_writes_nothing(runs, server, tmp_path):
    runs.options["--timeout"] = "600"  # its held requests wait however long the second run takes
    server.gate(answer=3)  # the first run holds the lock, writes 3 calls, then waits for the server
    out = tmp_path / "run"
    first, first_logs = runs.start(out)
    while lines(out / rundir.CALLS) < 3:
        assert runs.world.launcher.poll(first) is None, (Path(str(first_logs) + ".err")).read_text()
        time.sleep(0.01)
    rc, stdout, stderr = runs.run(out)
    assert runs.world.launcher.poll(first) is None, "the first run ended before the second one tried"
    server.open()
    assert rc == 2
    assert stderr.strip().startswith("critique: error:") and "being written by another process" in stderr
    assert len(stderr.strip().splitlines()) == 1 and stdout == ""
    assert runs.world.launcher.wait(first) == 0
    calls, predictions = rundir.read_jsonl(out / rundir.CALLS), rundir.read_jsonl(out / rundir.PREDICTIONS)
    assert len(calls) == TOTAL_CALLS == len(server.log)  # the refused process made no call
    assert not duplicates(calls, lambda c: c["request_hash"]) and not duplicates(predictions, pkey)
    assert len(predictions) == 6 * LIMIT and {c["run_id"] for c in calls} == {p["run_id"] for p in predictions}


@pytest.mark.parametrize("processes", ["0", "2"])  # the calls made in the run's process, or in two workers
def test_the_api_key_reaches_no_file_of_the_run_and_no_output(runs, server, tmp_path, processes):
    runs.options["--call-processes"] = processes
    # 401 echoes the key it was sent in its error message, as some providers do
    server.faults, server.fault_rate, server.seed = ("401", "500", "malformed", "429"), 0.3, 5
    out, cache = tmp_path / "run", runs.cache("cache")
    rc, stdout, stderr = runs.run(out, "--retries", "1", cache=cache)
    said = "predictions ended in an error" in stderr or "no retry can cure" in stderr  # a first call refused: stops
    assert rc in (0, 1) and (rc == 0) == (not said), stderr  # 1: it says so
    assert server.auth == {f"Bearer {SECRET}"}  # the key was really used
    errors = [c["error"] for c in rundir.read_jsonl(out / rundir.CALLS) if c["error"]]
    assert any("Incorrect API key provided: Bearer [REDACTED]" in e for e in errors), errors
    secret = SECRET.encode()
    files = [p for p in list(out.rglob("*")) + list(cache.rglob("*")) if p.is_file()]
    assert len(files) > 5
    for path in files:
        assert secret not in path.read_bytes(), path
    assert SECRET not in stdout and SECRET not in stderr
    assert SECRET[4:-4] not in stdout + stderr and all(SECRET[4:-4] not in e for e in errors)  # nor most of it
