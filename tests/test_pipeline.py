"""The pipeline end to end on the fake provider (real usage numbers), with the real encoder."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from critique.base import rundir
from critique.cli import main

ALL = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]


def run(out, *extra, limit=6, k=3):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", str(limit), "--k", str(k),
                 "--out", str(out), "--quiet", *extra])


def keys(records):
    return Counter((r["stage"], r["strategy"], r.get("user"), r["item_id"]) for r in records)


def test_full_run_logs_every_call_and_prediction(home, fake_llm, capsys):
    out = home / "run"
    assert run(out) == 0
    table = capsys.readouterr().out
    assert all(f"| {s} |" in table for s in ALL)
    data = rundir.read_run(out)
    stages = Counter(c["stage"] for c in data["calls"])
    assert stages == {"train_predict": 6, "critique": 6, "summary": 1, "test": 30}
    assert len(fake_llm.CALLS) == 43
    assert set(keys(data["predictions"]).values()) == {1}
    for call in data["calls"]:
        assert call["prompt_tokens"] == sum(len(m["content"].split()) for m in call["messages"])
        assert call["completion_tokens"] == len(call["response"].split()) and not call["cached"]
    test_ids = {p["item_id"] for p in data["predictions"] if p["stage"] == "test"}
    for p in data["predictions"]:
        if p["strategy"] in ("EP_LABEL", "EP_CRIT", "EP+SEM_CRIT"):
            assert len(p["retrieved"]) == 3 and p["item_id"] not in p["retrieved"]
            assert not set(p["retrieved"]) & test_ids
    entries = rundir.read_jsonl(out / "memory" / "episodic.jsonl")
    assert len(entries) == 6 and all(not e["assertion_mismatch"] for e in entries)
    fields = {"item_id", "question", "initial_answer", "gold", "critique", "model", "template_hash", "run_id"}
    assert fields <= set(entries[0])
    sem = json.loads((out / "memory" / "semantic.json").read_text())
    assert sem["all"]["advice"].startswith("- ") and sem["all"]["source_ids"] == [e["id"] for e in entries]
    manifest = data["manifest"]
    assert manifest["status"] == "complete" and manifest["dataset"]["name"] == "mcr-gen"
    assert "critic.j2" in manifest["templates"] and manifest["versions"]["litellm"]


def test_rerun_makes_zero_calls_and_writes_nothing_new(home, fake_llm):
    out = home / "run"
    assert run(out) == 0
    sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file() and p.suffix == ".jsonl"}
    fake_llm.CALLS.clear()
    assert run(out) == 0
    assert fake_llm.CALLS == []
    assert sizes == {p.name: p.stat().st_size for p in out.iterdir() if p.is_file() and p.suffix == ".jsonl"}


def test_response_cache_is_shared_across_runs_and_no_cache_bypasses_it(home, fake_llm):
    assert run(home / "a") == 0
    fake_llm.CALLS.clear()
    assert run(home / "b") == 0
    assert fake_llm.CALLS == []
    assert all(c["cached"] for c in rundir.read_jsonl(home / "b" / "calls.jsonl"))
    assert run(home / "c", "--no-cache") == 0
    assert len(fake_llm.CALLS) == 43


def test_adding_a_strategy_to_a_run_only_runs_that_strategy_and_the_train_stages_it_needs(home, fake_llm):
    assert run(home / "r", "--strategies", "zero_shot,EP_CRIT") == 0
    fake_llm.CALLS.clear()
    assert run(home / "r", "--strategies", "zero_shot,EP_CRIT,SEM_CRIT") == 0
    assert len(fake_llm.CALLS) == 1 + 6  # the summary SEM_CRIT needs, then its test answers
    assert rundir.read_run(home / "r")["manifest"]["config"]["strategies"] == ["zero_shot", "EP_CRIT", "SEM_CRIT"]


@pytest.mark.parametrize("strategies, stages", [
    ("zero_shot", {"test": 6}),  # nothing of the train stage
    ("zero_shot,EP_LABEL", {"train_predict": 6, "test": 12}),  # the initial answers EP_LABEL shows
    ("zero_shot,EP_CRIT", {"train_predict": 6, "critique": 6, "test": 12}),  # no summary: nothing reads it
    ("SEM_CRIT", {"train_predict": 6, "critique": 6, "summary": 1, "test": 6}),
])
def test_a_run_makes_only_the_train_stages_its_strategies_need(home, fake_llm, strategies, stages):
    assert run(home / "r", "--strategies", strategies) == 0
    assert Counter(c["stage"] for c in rundir.read_jsonl(home / "r" / rundir.CALLS)) == stages


@pytest.mark.parametrize("strategies, episodic, labels, pools", [
    (["zero_shot"], None, None, []),  # nothing of the train stage's memory
    (["zero_shot", "EP_LABEL"], None, 6, []),  # EP_LABEL's pool without a critique (the gold critic)
    (ALL, 6, 6, ["all"]),
])
def test_the_train_stage_returns_the_memory_it_made_and_the_run_keeps_none(home, fake_llm, strategies, episodic,
                                                                         labels, pools):
    from critique.base.config import RunConfig
    from critique.engine.methods import needed_stages
    from critique.runner import execute_run

    made = {}

    async def work(run) -> None:
        made["memory"] = await run.train_stage(needed_stages(run.config))
        made["attributes"] = set(vars(run))

    config = RunConfig(dataset="mcr-gen", model="fake/model", limit=6, k=3, strategies=list(strategies))
    execute_run(config, home / "r", work=work, progress=False)
    memory = made["memory"]
    assert (len(memory.episodic.entries) if memory.episodic else None) == episodic
    assert (len(memory.labels.entries) if memory.labels else None) == labels
    assert sorted(memory.semantic) == pools
    assert not {"memory", "labels", "semantic"} & made["attributes"]


def test_no_secret_reaches_the_run_directory(home, fake_llm, monkeypatch, capsys):
    secret = "sk-fake-SECRET-4242424242"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret + "x")
    assert run(home / "run") == 0
    for path in (home / "run").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret not in capsys.readouterr().out


def test_kill_9_in_the_test_stage_then_resume_leaves_one_record_per_item(home):
    out = home / "run"
    # 10 initial answers, 10 critiques, 1 summary, then 14 of the 50 test calls are answered, the rest held
    env = dict(os.environ, FAKE_LLM_HOLD_AFTER=str(10 + 10 + 1 + 14))
    command = [sys.executable, str(Path(__file__).parent / "fake_llm.py"), "run", "--dataset", "mcr-gen",
               "--model", "fake/model", "--limit", "10", "--k", "3", "--out", str(out), "--quiet", "--concurrency", "2"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tests = []
    while len(tests) < 12 and proc.poll() is None:
        tests = [r for r in rundir.read_jsonl(out / "predictions.jsonl") if r["stage"] == "test"]
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 12 <= len(tests) < 50, "killed in the middle of the test stage"
    env.pop("FAKE_LLM_HOLD_AFTER")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = rundir.read_run(out)
    assert set(keys(data["predictions"]).values()) == {1}
    assert len(keys(data["predictions"])) == 10 + 50
    assert Counter(c["request_hash"] for c in data["calls"]).most_common(1)[0][1] == 1
    assert data["manifest"]["status"] == "complete"


@pytest.mark.parametrize("args, message", [
    (["--dataset", "no-such-data"], "unknown dataset"),
    (["--model", "nosuchprovider/x"], "unknown model"),
    (["--model", "openai/gpt-4o-mini"], "OPENAI_API_KEY"),
    (["--strategies", "zero_shot,MAGIC"], "unknown strategy MAGIC"),
    (["--k", "0"], "--k must be at least 1"),
])
def test_bad_input_is_one_line_and_writes_nothing(home, fake_llm, monkeypatch, capsys, args, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = {"--dataset": "mcr-gen", "--model": "fake/model"}
    argv = ["run", "--out", str(home / "out"), "--quiet"]
    given = dict(zip(args[::2], args[1::2]))
    for flag, value in {**base, **given}.items():
        argv += [flag, value]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (home / "out").exists()


def test_broken_dataset_line_names_file_and_line(home, fake_llm, capsys):
    folder = home / "mydata"
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps({"name": "mine", "task": "t", "answer_space": ["yes", "no"]}))
    (folder / "train.jsonl").write_text('{"id": "1", "question": "q1", "answer": "yes"}\n{"id": "2", "question": \n')
    (folder / "test.jsonl").write_text('{"id": "3", "question": "q3", "answer": "no"}\n')
    assert main(["run", "--dataset", str(folder), "--model", "fake/model", "--out", str(home / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'train.jsonl'}:2:" in err and "not valid JSON" in err
    assert not (home / "out").exists()


def test_second_process_on_the_same_run_directory_is_refused(home, fake_llm, capsys):
    from filelock import FileLock

    out = home / "run"
    out.mkdir()
    with FileLock(str(out / ".lock")):
        assert run(out) == 2
    assert "being written by another process" in capsys.readouterr().err


# ---- Run.call: one request in flight, shared by its callers ---------------------------------------------
class _Calls:
    """What Run.call needs of a Run: one request hash for every prompt (Step.request over a model that hashes every
    request alike), and a _send held until released."""

    def __init__(self):
        import asyncio
        from functools import partial
        from types import SimpleNamespace

        from critique.engine.step import Step

        self.logged, self._pending, self.sent, self.cancelled = {}, {}, 0, 0
        self.started, self.release = asyncio.Event(), asyncio.Event()
        self.llm = SimpleNamespace(request=lambda messages, schema, name, seed=None, temperature=None,
                                   content_free=None: messages,
                                   request_hash=lambda r: "h")
        self.request = partial(Step.request, self)

    async def _send(self, key, *rest):
        import asyncio

        self.sent += 1
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "reply"


def _ask(calls):
    from critique.engine import agents
    from critique.engine.pipeline import Run

    prompt = agents.Prompt("t.j2", "x", [{"role": "user", "content": "q"}])
    return Run.call(calls, "test", "EP_CRIT", "i1", None, prompt, {}, "answer")


def test_a_cancelled_caller_does_not_cancel_the_shared_call_for_the_others():
    import asyncio

    async def main_():
        calls = _Calls()
        first, second = asyncio.ensure_future(_ask(calls)), asyncio.ensure_future(_ask(calls))
        await calls.started.wait()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        calls.release.set()
        assert await second == "reply" and first.cancelled()
        assert calls.sent == 1 and calls.cancelled == 0 and calls._pending == {}

    asyncio.run(main_())


def test_a_shared_call_is_cancelled_once_no_caller_awaits_it():
    import asyncio

    async def main_():
        calls = _Calls()
        tasks = [asyncio.ensure_future(_ask(calls)) for _ in range(2)]
        await calls.started.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        while calls._pending:  # the call ends (its cancellation is delivered on the loop's next turn)
            await asyncio.sleep(0)
        assert calls.sent == 1 and calls.cancelled == 1

    asyncio.run(main_())


def test_a_repeated_reply_never_answers_another_request(home, fake_llm):
    """A repetition (policy REPEAT: the consistency probe's repeats, the credit null control) is logged, but a
    later request with its hash is answered by the first reply, in the run and on resume, never by the repeat."""
    import asyncio

    from critique.base.config import RunConfig
    from critique.datasets.registry import resolve
    from critique.engine import agents
    from critique.engine.pipeline import Run
    from critique.engine.policy import REPEAT
    from critique.llm.client import LLM, llm_config

    config = RunConfig(dataset="mcr-gen", model="fake/model")
    prompt = agents.Prompt("t.j2", "x", [{"role": "user", "content": "Answer."}])

    def opened():
        r = Run(home / "f", config, resolve("mcr-gen"), LLM(llm_config(config)), None, progress=False)
        r.open()
        return r

    r = opened()
    first = asyncio.run(r.call("test", None, "i", None, prompt, {}, "answer"))
    kept = r.logged[first.request_hash]
    again = asyncio.run(r.call("test", None, "i", None, prompt, {}, "answer", REPEAT))
    assert again.request_hash == first.request_hash and r.logged[first.request_hash] is kept
    r.close(False)
    calls = rundir.read_jsonl(home / "f" / rundir.CALLS)
    assert len(calls) == 2
    calls[1]["response"] = "a repeat's other reply"
    rundir.write_jsonl_atomic(home / "f" / rundir.CALLS, calls)
    resumed = opened()
    assert resumed.logged[first.request_hash]["response"] == first.text
    resumed.close(False)
