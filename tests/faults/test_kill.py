"""kill -9 at 20 moments, resume each time: the logs end as an uninterrupted run's."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from critique import logs
from faults.conftest import LIMIT
from faults.harness import content, duplicates, lines, pkey

TRAIN_CALLS = 2 * LIMIT  # initial predictions and critiques; the summary is the next call
TOTAL_CALLS = 7 * LIMIT + 1
PLAN = ["start"] + ["train"] * 3 + ["start"] + ["train"] * 3 + ["summary"] * 3 + ["test"] * 9  # 20 kills


def stage_of(out: Path) -> str:
    calls = logs.read_jsonl(out / logs.CALLS)
    if any(c["stage"] == "summary" for c in calls):
        return "test"
    return "summary" if len(calls) >= TRAIN_CALLS else "train"


def moment(wanted: str, out: Path, rng: random.Random) -> tuple[str, float]:
    """When to kill a resumed run, to land in the wanted stage: after some seconds, after the
    calls log reaches a number of lines, or some seconds after the summary call began."""
    done = lines(out / logs.CALLS)
    if wanted == "train" and done < TRAIN_CALLS - 1:
        return "calls", rng.randint(done + 1, min(done + 3, TRAIN_CALLS - 1))
    if wanted == "summary":
        return "summary", rng.uniform(0.0, 0.25)
    low, high = max(done, TRAIN_CALLS + 1) + 1, min(done + 5, TOTAL_CALLS - 6)
    if wanted == "test" and low <= high:
        return "calls", rng.randint(low, high)
    return "seconds", rng.uniform(0.0, 0.3)


def kill_at(runs, out: Path, what: str, threshold: float, rng: random.Random) -> int:
    """Start a resume, wait for the moment, kill -9; the exit status."""
    started = time.time()
    pid, _ = runs.start(out)
    launcher, episodic = runs.world.launcher, out / logs.MEMORY / "episodic.jsonl"
    deadline, polled = time.monotonic() + 120, 0.0
    while time.monotonic() < deadline:
        if what == "seconds" and time.time() - started >= threshold:
            break
        if what == "calls" and lines(out / logs.CALLS) >= threshold:
            time.sleep(rng.uniform(0.0, 0.02))
            break
        if what == "summary" and episodic.exists() and episodic.stat().st_mtime >= started:
            time.sleep(threshold)  # the summary call is in flight (the server takes 0.3 s over it)
            break
        if time.monotonic() - polled > 0.05:
            if launcher.poll(pid) is not None:
                break
            polled = time.monotonic()
        time.sleep(0.002)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return launcher.wait(pid)


def tear(path: Path) -> None:
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: start + (len(data) - start) // 2])


def test_kill_9_at_20_moments_and_resume_ends_with_the_logs_of_an_uninterrupted_run(runs, server, tmp_path):
    server.latency, server.slow = 0.02, {"summary": 0.3}
    runs.options["--concurrency"] = "2"
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
            tear(out / logs.PREDICTIONS)
    print("kill moments (wanted, how, threshold, exit status, stage reached):", *moments, sep="\n  ")
    killed = [m for m in moments if m[3] == -signal.SIGKILL]
    assert len(killed) >= 18, moments
    assert sum(1 for m in killed if m[0] == m[4]) >= 15, moments
    assert {m[4] for m in killed if m[0] == m[4]} == {"train", "summary", "test"}, moments

    rc, stdout, stderr = runs.run(out)
    assert rc == 0, stderr
    calls, predictions = logs.read_jsonl(out / logs.CALLS), logs.read_jsonl(out / logs.PREDICTIONS)
    assert not duplicates(calls, lambda c: c["request_hash"]) and len(calls) == TOTAL_CALLS
    assert not duplicates(predictions, pkey) and len(predictions) == LIMIT + 5 * LIMIT
    assert not any(r["error"] for r in calls + predictions)
    mine, theirs = content(out), content(reference)
    for part in theirs:
        assert mine[part] == theirs[part], part
    assert mine["manifest"]["status"] == "complete"
