"""DSPy's own optimizers (dspy:mipro, dspy:gepa, dspy:simba; critique.engine.field.dspy_optimize) on the fake model:
every call an optimizer makes is a logged call of the run (one record per call the provider got, the request's
temperature as DSPy set it), the compiled program is saved and answers the test questions, its instructions and
demos are notes with sources, a second run makes no call, a run killed mid-compile resumes to the records of an
uninterrupted one, and --train-budget stops the compile."""

import json

import pytest

from critique.base import rundir
from critique.cli import main
from killed import kill_after_calls
from test_field_methods import _normal, argv, memory_of

OPTIMIZERS = ("dspy:mipro", "dspy:gepa", "dspy:simba")
LIMIT = 10
TRAIN = {f"mcr-{n:04d}" for n in range(LIMIT)}


def run_argv(out, name: str, *extra: str) -> list[str]:
    return argv(out, name, "--limit", str(LIMIT), "--no-cache", *extra)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_an_optimizer_compiles_through_the_runs_step_and_its_program_answers(home, fake_llm, name):
    out = home / "run"
    assert main(run_argv(out, name, "--train-budget", "20000")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert len(calls) == len(fake_llm.CALLS)  # every call the provider got is a record of the run
    compile_calls = [c for c in calls if c["stage"] == "dspy_compile"]
    assert compile_calls and {c["strategy"] for c in compile_calls} == {name}
    learned = memory_of(out, name)["pools"]["all"]
    assert learned["requests"] == [c["request_hash"] for c in compile_calls]
    assert learned["offline_tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in compile_calls)
    assert learned["stopped"] is None and learned["offline_tokens"] <= 20000
    notes = learned["notes"]
    assert notes[0]["id"] == "instructions:all" and set(notes[0]["sources"]) == TRAIN
    assert all(n["id"] == f"demo:{n['sources'][0]}" and set(n["sources"]) <= TRAIN for n in notes[1:])
    program = json.loads((out / "memory" / name.replace(":", "_") / "all.json").read_text(encoding="utf-8"))
    instructions = notes[0]["text"]
    assert instructions in json.dumps(program)
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    assert len(tests) == LIMIT and not any(r["error"] for r in tests)
    assert all(r["retrieved"] == [n["id"] for n in notes] for r in tests)
    asked = {c["request_hash"]: c for c in calls}
    for r in tests:  # each test prompt: the compiled program's instructions, as DSPy's JSONAdapter writes them
        assert instructions in asked[r["request_hash"]]["messages"][0]["content"]
    fake_llm.CALLS.clear()
    assert main(run_argv(out, name, "--train-budget", "20000")) == 0 and fake_llm.CALLS == []


def test_a_request_keeps_the_temperature_dspy_sets_for_it(home, fake_llm):
    assert main(run_argv(home / "run", "dspy:mipro", "--train-budget", "20000")) == 0
    temperatures = {c["temperature"] for c in fake_llm.CALLS}
    assert temperatures == {0.0, 1.0}  # the run's, and MIPROv2's bootstrap rounds after the first


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_run_killed_while_an_optimizer_compiles_resumes_to_the_records_of_an_uninterrupted_one(home, fake_llm,
                                                                                                 name):
    out, whole = home / "killed", home / "whole"
    command = kill_after_calls(run_argv(out, name, "--train-budget", "20000"), out, 9)
    assert len(rundir.read_jsonl(out / "calls.jsonl")) == 9
    assert main(command[2:]) == 0
    assert main(run_argv(whole, name, "--train-budget", "20000")) == 0
    calls = rundir.read_jsonl(out / "calls.jsonl")
    assert _normal(calls) == _normal(rundir.read_jsonl(whole / "calls.jsonl"))
    assert len({c["request_hash"] for c in calls}) == len(calls)  # no call made twice
    assert _normal(rundir.read_jsonl(out / "predictions.jsonl")) == _normal(
        rundir.read_jsonl(whole / "predictions.jsonl"))
    assert memory_of(out, name)["pools"] == memory_of(whole, name)["pools"]


def test_train_budget_stops_each_compile_and_a_program_it_stopped_is_the_tasks_own(home, fake_llm):
    out = home / "run"
    assert main(run_argv(out, ",".join(OPTIMIZERS), "--train-budget", "700")) in (0, 1)
    calls = rundir.read_jsonl(out / "calls.jsonl")
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    for name in OPTIMIZERS:
        learned = memory_of(out, name)["pools"]["all"]
        mine = [c for c in calls if c["request_hash"] in set(learned["requests"])]
        assert learned["stopped"] == "budget" and learned["train_budget"] == 700
        last = mine[-1]["prompt_tokens"] + mine[-1]["completion_tokens"]
        assert 700 <= learned["offline_tokens"] < 700 + last  # it stops at the first call past the budget
        mine = [r for r in tests if r["strategy"] == name]
        assert {r["error"] for r in mine} == {None}  # its best program answers, or the task's own program
        if not learned["notes"]:  # stopped before it returned a program: it learned nothing, the student answers
            assert all(r["retrieved"] == [] for r in mine)


def test_credit_leaves_out_a_demo_or_puts_back_the_tasks_own_instructions(home, fake_llm):
    out = home / "run"
    assert main(run_argv(out, "dspy:mipro", "--train-budget", "20000", "--limit", "12")) == 0
    notes = memory_of(out, "dspy:mipro")["pools"]["all"]["notes"]
    assert main(["credit", str(out), "--strategy", "dspy:mipro", "--quiet"]) == 0
    credit = home / "run__credit-dspy_mipro-test"
    asked = {c["request_hash"]: c for c in rundir.read_jsonl(credit / "calls.jsonl")}
    deletions = [r for r in rundir.read_jsonl(credit / "predictions.jsonl") if r["strategy"].startswith("without:")]
    assert {d["removed"] for d in deletions} == {n["id"] for n in notes}
    task = json.loads((home / "data" / "mcr-gen" / "dataset.json").read_text(encoding="utf-8"))["task"]
    assert notes[0]["text"].strip() != task.strip()  # MIPROv2 wrote its own instructions
    for d in deletions:
        system = asked[d["request_hash"]]["messages"][0]["content"]
        if d["removed"] == "instructions:all":
            assert task.strip() in system
        else:
            question = next(n["text"] for n in notes if n["id"] == d["removed"]).split(" -> ")[0]
            assert question not in "\n".join(m["content"] for m in asked[d["request_hash"]]["messages"])


def test_every_pool_of_preference_data_compiles_its_own_program_at_once(home, fake_llm):
    out = home / "run"  # 10 users x 3 optimizers: more compiles at once than the loop's default executor has threads
    assert main(argv(out, ",".join(OPTIMIZERS), "--dataset", "pref-gen", "--limit", "4", "--no-cache",
                     "--train-budget", "40000")) == 0
    tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
    users = {r["user"] for r in tests}
    assert len(users) == 10 and not any(r["error"] for r in tests)
    for name in OPTIMIZERS:
        pools = memory_of(out, name)["pools"]
        assert set(pools) == users and all(p["train_budget"] == 4000 and p["stopped"] is None for p in pools.values())
        assert all((out / "memory" / name.replace(":", "_") / f"{user}.json").exists() for user in users)
