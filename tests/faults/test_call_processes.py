"""--call-processes N: the calls' attempts made in N worker processes give the run directory
the in-process path writes, classify every fault the same, and no worker outlives its run
(kill -9 included). The faulted run and the API key: test_fault_rate.py and
test_lock_and_secrets.py, each also with two workers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from critique.base import rundir
from critique.llm.client import LLM, LLMConfig
from faults.harness import content, lines

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["1", "2", "3", "4"]}},
          "required": ["answer"], "additionalProperties": False}
KEY = "sk-fake-call-processes-7e1f0c9a2b"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Running (a zombie, which no one has reaped yet, has ended)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, what: str) -> None:
    """Wait for an event, however long the machine takes (pytest-timeout ends a test that hangs)."""
    while not condition():
        time.sleep(0.01)


def test_every_fault_is_classified_as_in_process_and_the_key_is_redacted(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # the half-rate cases first: once a call was answered, a 400 or 401 no longer stops the client (fail fast is
    # for a first call; critique.llm.client.LLM._fail_fast)
    cases = [("429", 0.5), ("500", 0.5)] + [(fault, 1.0) for fault in ("429", "500", "503", "malformed", "400", "401",
                                                                      "empty", "truncated", "length")]

    def results(processes: int) -> list:
        llm = LLM(LLMConfig(model="openai/fault-model", api_base=server.url, use_cache=False, num_retries=2,
                            retry_after=0.01, timeout=3.0, processes=processes))
        try:
            out = []
            for fault, rate in cases:  # a new event loop each time, as a study's runs may use
                server.faults, server.fault_rate, server.seed, server.retry_after = (fault,), rate, 7, "0.02"
                server.reset()
                result = asyncio.run(llm.complete([{"role": "user", "content": f"{fault} at {rate}"}], SCHEMA, "a"))
                out.append((result.text, result.error, result.retries, result.finish_reason, result.prompt_tokens,
                            result.completion_tokens, len(server.log)))
            return out
        finally:
            llm.close()

    in_process, in_workers = results(0), results(2)
    assert in_workers == in_process
    assert all(r[1] for r, (f, rate) in zip(in_workers, cases)
               if f in ("429", "500", "503", "400", "401") and rate == 1)
    assert in_workers[0][1] is None and in_workers[0][2] > 0  # retried, then answered
    denied = in_workers[[f for f, _ in cases].index("401")][1]
    assert "[REDACTED]" in denied and KEY not in denied and KEY[4:-4] not in denied


def test_many_calls_in_flight_over_two_workers_and_close_ends_them(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.latency = 0.05
    llm = LLM(LLMConfig(model="openai/fault-model", api_base=server.url, use_cache=False, concurrency=32,
                        processes=2))

    async def many():
        return await asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], SCHEMA, "a")
                                      for i in range(100)))

    results = asyncio.run(many())
    assert all(r.error is None and r.text for r in results) and len(server.log) == 100
    pids = llm._processes.pids()
    assert len(pids) == 2 and all(alive(p) for p in pids)
    llm.close()
    assert not any(alive(p) for p in pids)


def test_a_run_with_two_workers_writes_what_the_in_process_run_writes_even_killed_and_resumed(
        runs, server, tmp_path):
    server.latency = 0.02
    runs.options["--timeout"] = "600"  # a held request waits for the kill
    reference = tmp_path / "reference"
    rc, _, stderr = runs.run(reference, cache=runs.cache("cache"))
    assert rc == 0, stderr
    (tmp_path / "cache").rename(tmp_path / "cache-reference")  # the next run: a cache of its own, same path

    # with two workers, killed -9 while calls are in flight in them
    out, cache = tmp_path / "run", runs.cache("cache")
    runs.options["--call-processes"] = "2"
    server.gate(answer=10)
    pid, _ = runs.start(out, cache=cache)
    wait_until(lambda: server.holding() > 0 and lines(out / rundir.CALLS) >= 10, "calls held in the workers")
    workers = children(pid)
    assert len(workers) == 2, workers
    assert all(b"critique.llm.workers" in (Path("/proc") / str(w) / "cmdline").read_bytes() for w in workers)
    os.kill(pid, signal.SIGKILL)
    assert runs.world.launcher.wait(pid) == -signal.SIGKILL
    server.open()
    wait_until(lambda: not any(alive(w) for w in workers), "the workers of the killed run to end")

    rc, _, stderr = runs.run(out, cache=cache)  # resumed, with two workers again
    assert rc == 0, stderr
    mine, theirs = content(out), content(reference)
    assert mine["manifest"]["config"].pop("call_processes") == 2
    assert theirs["manifest"]["config"].pop("call_processes") == 0
    for part in theirs:
        assert mine[part] == theirs[part], part
    calls = rundir.read_jsonl(out / rundir.CALLS)
    by_hash = {c["request_hash"]: c for c in rundir.read_jsonl(reference / rundir.CALLS)}
    volatile = {"run_id", "time", "latency_s", "cached", "retries"}
    for call in calls:  # byte for byte but the volatile fields, hash included
        same = by_hash[call["request_hash"]]
        assert {k: v for k, v in call.items() if k not in volatile} == \
            {k: v for k, v in same.items() if k not in volatile}


@pytest.mark.parametrize("processes", [0, 1])
def test_no_worker_without_two_processes(server, monkeypatch, processes):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm = LLM(LLMConfig(model="openai/fault-model", api_base=server.url, use_cache=False, processes=processes))
    result = asyncio.run(llm.complete([{"role": "user", "content": "one"}], SCHEMA, "a"))
    assert result.error is None and llm._processes is None
    llm.close()


def test_a_worker_that_dies_fails_its_attempts_as_retryable_and_is_replaced(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm = LLM(LLMConfig(model="openai/fault-model", api_base=server.url, use_cache=False, concurrency=8,
                        processes=2, num_retries=2, retry_after=0.01))
    try:
        assert asyncio.run(llm.complete([{"role": "user", "content": "warm"}], SCHEMA, "a")).error is None
        first = llm._processes.pids()
        server.gate(answer=0)  # every request is held: the next calls are in flight in the workers

        async def many():
            calls = asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], SCHEMA, "a")
                                     for i in range(8)))
            await asyncio.to_thread(wait_until, lambda: server.holding() >= 8, "8 requests held")
            for pid in first:  # both: each held request was in one of them, however they were shared out
                os.kill(pid, signal.SIGKILL)
            await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in first), "the kill")
            server.open()
            return await calls

        results = asyncio.run(many())
        assert all(r.error is None and r.text for r in results), [r.error for r in results]
        assert any(r.retries > 0 for r in results)  # the dead worker's calls were retried elsewhere
        assert not set(first) & set(llm._processes.pids()) and len(llm._processes.pids()) == 2
    finally:
        llm.close()
