"""A run against a server that faults on 20% of attempts (and is down for some requests)."""

from __future__ import annotations

from collections import Counter

import pytest

from critique.base import rundir
from critique.base.rundir import latest
from faults.conftest import LIMIT
from faults.harness import duplicates, lines, pkey
from faults.server import TRANSIENT, messages_digest

STRATEGIES = 5


@pytest.mark.parametrize("processes", ["0", "2"])  # the calls made in the run's process, or in two workers
def test_a_run_with_20_percent_faults_completes_counts_everything_and_a_rerun_retries_only_the_failures(
        runs, server, tmp_path, processes):
    runs.options["--call-processes"] = processes
    out = tmp_path / "run"
    # 20% of attempts fault; 10% of requests meet an outage. With seed 2 (and today's templates and schemas) the
    # outage hits a train prediction, a critique, the summary and a test call: every path below is used.
    server.latency, server.fault_rate, server.doom_rate, server.seed = 0.005, 0.2, 0.1, 2
    server.retry_after, server.hang_s = "0.05", 30.0
    rc, stdout, stderr = runs.run(out, "--timeout", "3")
    calls, predictions = rundir.read_jsonl(out / rundir.CALLS), rundir.read_jsonl(out / rundir.PREDICTIONS)
    errored = [p for p in latest(predictions) if p["error"]]
    # the run completes, and says how many predictions ended in an error (exit 1) when any did
    assert rc == (1 if errored else 0), stderr
    assert not errored or f"{len(errored)} predictions ended in an error" in stderr
    outcomes = Counter(outcome for _, _, outcome in server.log)
    assert sum(outcomes[f] for f in outcomes if f != "ok") >= 0.15 * len(server.log), outcomes
    assert len(set(outcomes) - {"ok"}) >= 4, outcomes  # every kind of fault, one by one: test_llm_faults.py

    # every item has exactly one final prediction, none dropped
    assert not duplicates(predictions, pkey)
    assert len(predictions) == LIMIT + STRATEGIES * LIMIT

    # retries and final failures are counted: each call's attempts are what the server saw
    attempts = Counter(digest for digest, _, _ in server.log)
    last = {digest: outcome for digest, _, outcome in server.log}
    assert sum(c["retries"] + 1 for c in calls) == len(server.log)
    for call in calls:
        digest = messages_digest(call["messages"])
        assert attempts[digest] == call["retries"] + 1, call["item_id"]
        failed_for_good = last[digest] in TRANSIENT
        assert (call["error"] is not None) == failed_for_good, (call["error"], last[digest])
        if failed_for_good:
            assert call["retries"] == 2 and call["response"] is None
    failed = [c for c in calls if c["error"]]
    assert failed and any(c["retries"] > 0 and not c["error"] for c in calls)

    # failed calls end as error predictions, reported in the table; the rest parse by the policy
    by_hash = {c["request_hash"]: c for c in calls}
    errors = [p for p in predictions if p["error"]]
    assert errors and all(not p["correct"] for p in errors)
    for p in predictions:
        call = by_hash.get(p["request_hash"])
        if call is None:  # a semantic strategy left without advice: the summary call failed
            assert "no semantic memory" in p["error"] and any(c["stage"] == "summary" for c in failed)
            continue
        assert bool(p["error"]) == bool(call["error"])
        if call["finish_reason"] == "length":
            assert p["timeout"] and not p["correct"]
        if call["response"] is not None and call["response"].strip() in ("", '{"answe'):
            assert p["parse_failed"] and not p["correct"] and p["answer"] != p["gold"]
    table = [[cell.strip() for cell in row.strip("|").split("|")]
             for row in stdout.splitlines() if row.startswith("| ")]
    column = table[0].index("errors")
    assert sum(int(row[column]) for row in table[1:]) == sum(1 for p in errors if p["stage"] == "test")

    # a rerun, the outage over, calls again exactly what failed (and what depends on it)
    server.fault_rate, server.doom_rate = 0.0, 0.0
    server.reset()
    size = lines(out / rundir.CALLS)
    expected = {pkey(p) for p in errors} | {pkey(c) for c in failed}
    redone = {p["item_id"] for p in errors if p["stage"] == "train_predict"}
    expected |= {("critique", None, None, i) for i in redone}
    if any(c["stage"] in ("train_predict", "critique") for c in failed):
        expected.add(("summary", None, None, None))
    rc, _, stderr = runs.run(out)
    assert rc == 0, stderr
    new_calls = rundir.read_jsonl(out / rundir.CALLS)[size:]
    assert {pkey(c) for c in new_calls} == expected
    assert len(new_calls) == len(expected) == len(server.log)
    final = latest(rundir.read_jsonl(out / rundir.PREDICTIONS))
    assert len(final) == LIMIT + STRATEGIES * LIMIT and not any(p["error"] for p in final)
    assert len(rundir.read_jsonl(out / rundir.PREDICTIONS)) == len(predictions) + len(errors)

    # and a third run has nothing left to do
    server.reset()
    sizes = (lines(out / rundir.CALLS), lines(out / rundir.PREDICTIONS))
    rc, stdout, _ = runs.run(out)
    assert rc == 0 and server.log == [] and "0 LLM calls made" in stdout
    assert sizes == (lines(out / rundir.CALLS), lines(out / rundir.PREDICTIONS))
