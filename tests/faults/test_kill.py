"""kill -9 at 20 moments, resume each time: the logs end as an uninterrupted run's."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from critique.base import rundir
from faults.conftest import LIMIT
from faults.harness import content, duplicates, lines, pkey

TRAIN_CALLS = 2 * LIMIT  # initial predictions and critiques; the summary is the next call
TOTAL_CALLS = 7 * LIMIT + 1
PLAN = ["start"] + ["train"] * 3 + ["start"] + ["train"] * 3 + ["summary"] * 3 + ["test"] * 9  # 20 kills


def stage_of(out: Path) -> str:
    calls = rundir.read_jsonl(out / rundir.CALLS)
    if any(c["stage"] == "summary" for c in calls):
        return "test"
    return "summary" if len(calls) >= TRAIN_CALLS else "train"


def moment(wanted: str, out: Path, rng: random.Random) -> tuple[str, int]:
    """When to kill a resumed run, as an event the run or the server reports, so that the kill
    lands in the wanted stage on a machine of any speed:
    ("fork", 0)      at once, while the process starts;
    ("request", 0)   when its first request reaches the server (which answers none);
    ("calls", n)     when the calls log has n lines (the server answers just enough requests);
    ("summary", 0)   when the summary request reaches the server (which holds it)."""
    done = lines(out / rundir.CALLS)
    if wanted == "start":  # before anything was written, then at a resume's first request
        return ("fork", 0) if done == 0 else ("request", 0)
    if wanted == "summary":
        return "summary", 0
    if wanted == "train" and done < TRAIN_CALLS - 1:
        return "calls", rng.randint(done + 1, min(done + 3, TRAIN_CALLS - 1))
    if wanted == "test":  # past the summary call, and short of the last call
        low = max(done, TRAIN_CALLS + 1) + 1
        return "calls", rng.randint(low, min(low + 3, TOTAL_CALLS - 1))
    return "request", 0  # train, with every train call but the last already logged


def kill_at(runs, out: Path, what: str, threshold: int, rng: random.Random) -> int:
    """Start a resume, wait for the event, kill -9; the exit status. Between the event and the
    kill a random pause of up to 20 ms lets the kill fall anywhere in what the run then does;
    the server's gate keeps the run from going further than the event meanwhile."""
    server, launcher = runs.server, runs.world.launcher
    if what == "summary":
        server.gate(hold={"summary"})
    else:
        server.gate(answer=max(0, threshold - lines(out / rundir.CALLS)))
    pid, _ = runs.start(out)
    events = {
        "fork": lambda: True,
        "request": lambda: server.holding() > 0,
        "calls": lambda: lines(out / rundir.CALLS) >= threshold,
        "summary": lambda: server.holding("summary") > 0,
    }
    waited_for = events[what]
    while not waited_for():
        if launcher.poll(pid) is not None:  # it ended before the event: the moment is missed
            break
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.02))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    rc = launcher.wait(pid)
    server.open()
    return rc


def tear(path: Path) -> None:
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: start + (len(data) - start) // 2])


def test_kill_9_at_20_moments_and_resume_ends_with_the_logs_of_an_uninterrupted_run(runs, server, tmp_path):
    server.latency = 0.02
    runs.options["--concurrency"] = "2"
    runs.options["--timeout"] = "600"  # a held request waits for the kill, however long that takes
    cache = tmp_path / "cache"
    reference = tmp_path / "reference"
    rc, _, stderr = runs.run(reference, cache=runs.cache("cache"))
    assert rc == 0, stderr
    cache.rename(tmp_path / "cache-reference")  # the killed run starts with a cache of its own, same path
    runs.cache("cache")

    out, rng = tmp_path / "run", random.Random(20)
    moments = []
    for wanted in PLAN:
        what, threshold = moment(wanted, out, rng)
        rc = kill_at(runs, out, what, threshold, rng)
        moments.append((wanted, what, round(threshold, 2), rc, stage_of(out)))
        if len(moments) == 14:  # as if the kill had cut the last prediction in the middle of its line
            tear(out / rundir.PREDICTIONS)
    print("kill moments (wanted, how, threshold, exit status, stage reached):", *moments, sep="\n  ")
    killed = [m for m in moments if m[3] == -signal.SIGKILL]
    assert len(killed) == len(PLAN), moments
    assert all(m[0] == m[4] for m in killed if m[0] != "start"), moments  # each kill landed where it was planned

    rc, stdout, stderr = runs.run(out)
    assert rc == 0, stderr
    calls, predictions = rundir.read_jsonl(out / rundir.CALLS), rundir.read_jsonl(out / rundir.PREDICTIONS)
    assert not duplicates(calls, lambda c: c["request_hash"]) and len(calls) == TOTAL_CALLS
    assert not duplicates(predictions, pkey) and len(predictions) == LIMIT + 5 * LIMIT
    assert not any(r["error"] for r in calls + predictions)
    mine, theirs = content(out), content(reference)
    for part in theirs:
        assert mine[part] == theirs[part], part
    assert mine["manifest"]["status"] == "complete"
