"""`critique study`: checking the file before any call, running cells in parallel within
per-provider limits, a Router over several endpoints, skipping complete cells, and a
study killed with SIGKILL and resumed."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from critique.base import rundir
from critique.cli import main


def write(path, text):
    path.write_text(text)
    return path


def keys(records):
    return Counter((r["stage"], r["strategy"], r.get("user"), r["item_id"]) for r in records)


def run_dirs(folder):
    return sorted(p for p in folder.iterdir() if rundir.is_run_dir(p))


BASE = """
datasets = ["mcr-gen"]
limit = 3
strategies = ["zero_shot"]
out = "out"
"""


@pytest.mark.parametrize("extra, message", [
    ('[[models]]\nname = "fake/model"\ntemprature = 0.5\n', "unknown field [[models]] #1: 'temprature'"),
    ('colour = "red"\n[[models]]\nname = "fake/model"\n', "unknown field 'colour'"),
    ('[[models]]\nname = "fake/model"\n[probes.suggestibility]\nattribution = ["user"]\n',
     "unknown field probes.suggestibility.'attribution'"),
    ('[[models]]\nname = "fake/model"\n[ablations.depth]\nvalues = [1]\n', "unknown field ablations.'depth'"),
    ('[[models]]\nname = "fake/model"\n[ablations.k]\nvalues = [0]\n', "ablations.k.values"),
    ('[[models]]\nname = "nosuchprovider/x"\n', "unknown model 'nosuchprovider/x'"),
    ('[[models]]\nname = "fake/model"\nmax_tokens = "many"\n', "[[models]] #1.max_tokens must be a whole number"),
    ('[[models]]\nname = "fake/model"\ncontext_tokens = 0\n', "[[models]] #1.context_tokens must be at least 1"),
    ('[[models]]\nname = "fake/model"\n[[router.model_list]]\nmodel_name = "fake/other"\n'
     'litellm_params = { model = "fake/other", api_base = "http://a" }\n', "is not the name of a [[models]] entry"),
    ('[[models]]\nname = "fake/model"\n[probes.consistency]\nrepeats = 1\n', "repeats must be a whole number >= 2"),
    ('[[models]]\nname = "fake/model"\n[probes.stream]\norder = 1\n', "give feedback (a mode or a list"),
    ('[[models]]\nname = "fake/model"\n[probes.stream]\nfeedback = "loud"\n', "--feedback must be one of"),
    ('[[models]]\nname = "fake/model"\n[probes.stream]\narms = true\nstart = "empty"\n',
     "arms = true sets the arms itself: start"),
    ('[[models]]\nname = "fake/model"\n[probes.stream]\nfeedback = "self"\ndisable_test = true\n',
     "--disable-test needs labelled feedback"),
    ('[[models]\nname = "fake/model"\n', "not valid TOML"),
    ('prompts = "fancy"\n[[models]]\nname = "fake/model"\n',
     "prompts must be one of paper, compact, turns, not 'fancy'"),
    ('on_mismatch = "ignore"\n[[models]]\nname = "fake/model"\n', "on_mismatch must be one of keep, drop, recritique"),
])
def test_a_bad_study_file_is_one_clear_error_before_any_call(home, fake_llm, capsys, extra, message):
    study = write(home / "study.toml", BASE + extra)
    assert main(["study", str(study)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(study) in err and message in err and len(err.splitlines()) == 1, err
    assert fake_llm.CALLS == [] and not (home / "out").exists()


def test_a_models_context_window_reaches_its_cells(home):
    from critique.experiments.study.file import load
    from critique.experiments.study.plan import base_config

    study = load(write(home / "study.toml", BASE + '[[models]]\nname = "fake/served"\ncontext_tokens = 32768\n'
                            '[[models]]\nname = "fake/model"\n'))
    served, other = study.models
    assert base_config(study, served, "mcr-gen").context_tokens == 32768
    assert base_config(study, other, "mcr-gen").context_tokens is None


def test_the_prompt_set_and_the_mismatch_rule_reach_every_cell(home):
    from critique.experiments.study.file import load
    from critique.experiments.study.plan import base_config

    plain = load(write(home / "plain.toml", BASE + '[[models]]\nname = "fake/model"\n'))
    assert (base_config(plain, plain.models[0], "mcr-gen").prompts,
            base_config(plain, plain.models[0], "mcr-gen").on_mismatch) == ("paper", "keep")
    study = load(write(home / "study.toml", 'prompts = "compact"\non_mismatch = "drop"\n' + BASE +
                       '[[models]]\nname = "fake/model"\n'))
    config = base_config(study, study.models[0], "mcr-gen")
    assert (config.prompts, config.on_mismatch) == ("compact", "drop")


def test_a_cell_that_starts_after_the_study_was_stopped_touches_nothing(home, fake_llm, capsys):
    from critique.experiments.study import engines
    from critique.experiments.study.execute import run_cell
    from critique.experiments.study.file import check, load
    from critique.experiments.study.plan import plan

    study = load(write(home / "study.toml", BASE + '[[models]]\nname = "fake/model"\n'))
    (cell,) = plan(study, check(study))
    shared = engines.coordinator("threading", {}, 1, study.out)
    shared.request_stop()  # an interrupted study: this cell was queued and begins only now
    assert run_cell(cell, 1, str(study.out), None, shared)["status"] == "stopped"
    assert fake_llm.CALLS == [] and not study.out.exists() and shared.running_count() == 0


def test_a_study_with_another_critic_gets_its_own_run_directory_and_reuses_the_gold_runs_calls(home, fake_llm,
                                                                                                 capsys):
    gold = write(home / "gold.toml", BASE.replace('"zero_shot"', '"zero_shot", "EP_CRIT"')
                 + 'use_cache = false\n[[models]]\nname = "fake/model"\n')
    assert main(["study", str(gold)]) == 0
    made = len(fake_llm.CALLS)
    noisy = write(home / "noisy.toml", 'critic = "noisy:0.5"\n' + gold.read_text())
    assert main(["study", str(noisy)]) == 0
    assert [p.name for p in run_dirs(home / "out")] == ["mcr-gen__fake_model", "mcr-gen__fake_model__critic-noisy_0.5"]
    # the initial answers, the unflipped items' critiques and zero_shot are the gold run's very requests
    assert 0 < len(fake_llm.CALLS) - made < made
    manifest = json.loads((home / "out" / "mcr-gen__fake_model__critic-noisy_0.5" / rundir.MANIFEST).read_text())
    assert manifest["config"]["critic"] == "noisy:0.5"


def test_the_cells_of_a_worker_process_share_its_one_event_loop(home, fake_llm, monkeypatch):
    """A dask worker runs cells in several threads at once (loky one after another): a loop per cell
    would break litellm's process-wide async state (its logging worker is bound to one loop)."""
    import asyncio

    from critique.experiments.study import engines
    from critique.experiments.study.execute import process_loop, run_cell
    from critique.experiments.study.file import check, load
    from critique.experiments.study.plan import plan

    study = load(write(home / "study.toml", BASE + '[[models]]\nname = "fake/one"\n[[models]]\nname = "fake/two"\n'))
    cells = plan(study, check(study))
    shared = engines.coordinator("threading", {}, 2, study.out)

    def one_loop_per_cell(coroutine):
        coroutine.close()
        raise AssertionError("a cell made an event loop of its own")

    monkeypatch.setattr(asyncio, "run", one_loop_per_cell)
    results = [None, None]

    def worker_thread(i: int) -> None:  # as a dask worker's thread: no study loop given
        results[i] = run_cell(cells[i], 2, str(study.out), None, shared)

    threads = [threading.Thread(target=worker_thread, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r["status"] for r in results] == ["done", "done"], results
    assert process_loop() is process_loop() and process_loop().loop.is_running()
    assert sorted({c["model"].split("/")[-1] for c in fake_llm.CALLS}) == ["one", "two"]


def test_unknown_dataset_is_refused_before_any_call(home, fake_llm, capsys):
    study = write(home / "study.toml", BASE.replace('"mcr-gen"', '"mcr-gen", "no-such-data"')
                  + '[[models]]\nname = "fake/model"\n')
    assert main(["study", str(study)]) == 2
    assert "unknown dataset 'no-such-data'" in capsys.readouterr().err
    assert fake_llm.CALLS == [] and not (home / "out").exists()


def test_cells_run_in_parallel_within_the_provider_limit_and_through_the_router(home, fake_llm, monkeypatch,
                                                                                  capsys):
    handler = fake_llm._HANDLER
    inner = handler.completion
    lock, state, bases = threading.Lock(), {"now": 0, "peak": 0}, Counter()

    def counting(model, messages, *args, **kwargs):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            bases[(model, kwargs.get("api_base"))] += 1
        try:
            time.sleep(0.01)
            return inner(model, messages, *args, **kwargs)
        finally:
            with lock:
                state["now"] -= 1

    monkeypatch.setattr(handler, "completion", counting)
    head = BASE.replace("limit = 3", "limit = 4").replace('["zero_shot"]', '["zero_shot", "EP_CRIT"]')
    study = write(home / "study.toml", head + """concurrency = 4
jobs = 2

[[models]]
name = "fake/model"

[[models]]
name = "fake/served"

[providers]
fake = 2

[probes.suggestibility]
attributions = ["user"]
models = ["fake/model"]

[ablations.k]
values = [1]

[router]
routing_strategy = "simple-shuffle"

[[router.model_list]]
model_name = "fake/served"
litellm_params = { model = "fake/served", api_base = "http://gpu1:8000/v1" }

[[router.model_list]]
model_name = "fake/served"
litellm_params = { model = "fake/served", api_base = "http://gpu2:8000/v1" }
""")
    assert main(["study", str(study)]) == 0
    printed = capsys.readouterr().out
    assert "[1/2] mcr-gen x fake/model: complete" in printed and "[2/2] mcr-gen x fake/served: complete" in printed
    assert "[1/2] mcr-gen x fake/model: suggestibility-user done" in printed
    assert 1 <= state["peak"] <= 2  # two cells with 4 calls in flight each, 2 at most for the provider
    served = {base for (model, base) in bases if "served" in model}
    assert served == {"http://gpu1:8000/v1", "http://gpu2:8000/v1"}  # load-balanced over both endpoints
    out = home / "out"
    names = [p.name for p in run_dirs(out)]
    assert names == ["mcr-gen__fake_model", "mcr-gen__fake_model__k-1", "mcr-gen__fake_model__suggestibility-user",
                     "mcr-gen__fake_served", "mcr-gen__fake_served__k-1"]
    for path in run_dirs(out):
        data = rundir.read_run(path)
        assert data["manifest"]["status"] == "complete"
        assert set(keys(data["predictions"]).values()) == {1}
    served_manifest = rundir.read_run(out / "mcr-gen__fake_served")["manifest"]
    assert [d["api_base"] for d in served_manifest["deployments"]] == ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]
    k1 = rundir.read_run(out / "mcr-gen__fake_model__k-1")
    assert all(c["cached"] for c in k1["calls"] if c["stage"] != "test")  # the cell's run paid the train stage
    fake_llm.CALLS.clear()
    assert main(["study", str(study)]) == 0  # everything complete: cells skipped, no call
    printed = capsys.readouterr().out
    assert "[1/2] mcr-gen x fake/model: complete, skipped" in printed and "2 complete, 0 to run" in printed
    assert fake_llm.CALLS == []
    other = write(home / "other.toml", 'prompts = "compact"\n' + study.read_text())  # same folders, other prompts
    assert main(["study", str(other), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "0 complete, 2 to run" in printed and "run (partial)" in printed  # not taken for the finished runs


def test_a_study_killed_with_sigkill_resumes_to_one_record_per_item(home):
    study = write(home / "study.toml", """
datasets = ["mcr-gen"]
limit = 8
k = 3
concurrency = 2
jobs = 2
out = "out"

[[models]]
name = "fake/one"

[[models]]
name = "fake/two"

[ablations.k]
values = [1]
""")
    out = home / "out"
    command = [sys.executable, str(Path(__file__).parent / "fake_llm.py"), "study", str(study)]
    # each cell's train stage is 8 + 8 + 1 calls; 20 more are answered, the rest held
    env = dict(os.environ, FAKE_LLM_HOLD_AFTER=str(2 * 17 + 20))
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tests = 0
    while tests < 10 and proc.poll() is None:
        tests = sum(1 for path in (out.glob("*/predictions.jsonl") if out.exists() else [])
                    for r in rundir.read_jsonl(path) if r["stage"] == "test")
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    per_cell = 8 * 5 + 8  # plain run (five strategies) + k-1 (EP_CRIT)
    assert 10 <= tests < 2 * per_cell, "killed in the middle of the study"
    env.pop("FAKE_LLM_HOLD_AFTER")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "mcr-gen x fake/one: complete" in done.stdout and "mcr-gen x fake/two: complete" in done.stdout
    dirs = run_dirs(out)
    assert [p.name for p in dirs] == ["mcr-gen__fake_one", "mcr-gen__fake_one__k-1", "mcr-gen__fake_two",
                                      "mcr-gen__fake_two__k-1"]
    for path in dirs:
        data = rundir.read_run(path)
        assert data["manifest"]["status"] == "complete"
        assert set(keys(data["predictions"]).values()) == {1}
        expected = 8 + (8 * 5 if "__k-" not in path.name else 8)
        assert len(keys(data["predictions"])) == expected
        assert Counter(c["request_hash"] for c in data["calls"]).most_common(1)[0][1] == 1
    again = subprocess.run(command, env=dict(env, FAKE_LLM_DELAY="0"), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "2 complete, 0 to run" in again.stdout and "0 LLM calls made" in again.stdout


def test_example_study_file_is_valid():
    from critique.experiments import study

    example = study.load(Path(__file__).parent.parent / "examples" / "study.toml")
    assert [m.name for m in example.models][-1] == "hosted_vllm/Qwen/Qwen3-8B"
    assert len(example.models[-1].deployments) == 2
    assert set(example.ablations) == {"k", "train_size", "parts"}
    assert set(example.probes) == {"suggestibility", "consistency", "stream"}
    assert example.credit["rules"] == [("estimate", 10), ("lowest", 10)] and example.credit["datasets"] == ["mcr"]
    assert {"ace", "dc", "expel", "dspy:knn"} <= set(example.strategies) and example.settings["train_budget"] > 0
    cells = study.plan(example, {d: "x" for d in example.datasets})
    assert len(cells) == len(example.models) * len(example.datasets)


ROOT = Path(__file__).resolve().parents[1]
SHIPPED_STUDIES = sorted((ROOT / "logs").glob("*.toml")) + sorted((ROOT / "logs-methods").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED_STUDIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_shipped_study_file_is_what_the_shipped_logs_ran(home, path):
    """`critique study logs/X.toml` on a fresh clone has nothing left to do: every run directory it plans
    is shipped and complete, with the file's settings."""
    from critique.experiments.study.file import check, load
    from critique.experiments.study.plan import plan, task_state

    study = load(path)
    states = {t.label: task_state(t) for cell in plan(study, check(study)) for t in cell.tasks}
    assert states and set(states.values()) == {"complete"}, states


def test_a_studys_stream_arms_are_the_runs_of_critique_stream_arms(home, fake_llm, capsys):
    """[probes.stream] arms = true writes the run directories ``critique stream --arms`` writes, with the same
    records; its random control takes the verifier arm's budget once that arm has run."""
    study = write(home / "study.toml", BASE.replace("limit = 3", "limit = 4\nk = 3") + """
[[models]]
name = "fake/model"

[probes.stream]
arms = true
""")
    assert main(["study", str(study), "--dry-run"]) == 0
    assert "stream-self-deinflate-randomN (new)" in capsys.readouterr().out  # the budget is not known yet
    assert main(["study", str(study)]) == 0
    studied = {p.name: p for p in run_dirs(home / "out") if "__stream-" in p.name}
    assert main(["stream", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--k", "3", "--arms",
                 "--out", str(home / "arms"), "--quiet"]) == 0
    streamed = {p.name: p for p in run_dirs(home / "arms")}
    assert sorted(studied) == sorted(streamed) and len(studied) == 6
    assert any("deinflate-random" in name and not name.endswith("randomN") for name in studied)
    for name, path in studied.items():
        mine, theirs = rundir.read_run(path), rundir.read_run(streamed[name])
        assert mine["manifest"]["probe"] == theirs["manifest"]["probe"]
        assert _answers(mine) == _answers(theirs) and _answers(mine)
    fake_llm.CALLS.clear()
    assert main(["study", str(study)]) == 0 and fake_llm.CALLS == []


def _answers(data: dict) -> list[tuple]:
    return sorted((r["step"], r["item_id"], r["answer"]) for r in data["predictions"] if r["stage"] == "stream")
