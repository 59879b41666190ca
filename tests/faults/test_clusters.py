"""Studies on a cluster engine: a real distributed.LocalCluster with worker processes (and
loky's worker processes) against the counting loopback server. The provider limit holds over
all processes, at most `jobs` cells run at once, an interrupted or killed study stops its
workers' calls, and a rerun completes with the records of the threading backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.harness import content
from faults.server import FaultServer

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("openai/m1", "openai/m2", "openai/m3")
PER_CELL = 3 + 3 + 3 * 2  # limit 3: initial answers, critiques, two strategies (neither needs the summary)
HANG_S = 300  # how long a wait that should end in seconds is given before it counts as a hang


@pytest.fixture
def env(tmp_path, monkeypatch):
    """What the study and the workers see: the same data and cache folders, a key."""
    values = {"CRITIQUE_DATA_DIR": str(tmp_path / "data"), "CRITIQUE_CACHE_DIR": str(tmp_path / "cache"),
              "OPENAI_API_KEY": "sk-cluster-test-0000", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
              "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return dict(os.environ)


@pytest.fixture
def server():
    with FaultServer(latency=0.05) as s:
        yield s


@pytest.fixture
def cluster(env):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as c, distributed.Client(c) as client:
        yield c, client


def study_file(folder: Path, server, limit: int = 2, jobs: int = 3, out: str = "out", cache: bool = True) -> Path:
    models = "".join(f'\n[[models]]\nname = "{m}"\napi_base = "{server.url}"\n' for m in MODELS)
    path = folder / f"{out}.toml"
    path.write_text(f'datasets = ["mcr-gen"]\nlimit = 3\nk = 2\nstrategies = ["zero_shot", "EP_CRIT"]\n'
                    f'concurrency = 4\njobs = {jobs}\nretries = 1\ntimeout = 120\nout = "{out}"\n'
                    f'use_cache = {str(cache).lower()}\n'
                    f'\n[providers]\nopenai = {limit}\n{models}')
    return path


# `python -m critique.cli`, with Ctrl-C (SIGINT) raising KeyboardInterrupt as in a terminal: a process started
# in the background of a shell without job control (`.ci/run &`, nohup) inherits SIGINT ignored, and Python
# then leaves it ignored, so the interrupted study would never hear it
CLI = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "sys.argv[0] = 'critique'; runpy.run_module('critique.cli', run_name='__main__', alter_sys=True)")


def start(path: Path, env: dict, *options: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, "study", str(path), *options], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return out


def run_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.glob("*/manifest.json"))


def wait_for(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    """Wait until ``condition()`` holds (an event the code reports), or the process ended first."""
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the study ended before {what}: {proc.stdout.read()}")
        time.sleep(0.02)


def cells_running(client, out: Path, jobs: int) -> int:
    from critique.experiments.study.engines import study_id

    return int(distributed.Semaphore(max_leases=jobs, name=f"critique-{study_id(out)}-cells").get_value())


def descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        here = todo.pop()
        for task in Path(f"/proc/{here}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            todo.extend(children)
            found.update(children)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_dask_workers_keep_the_provider_limit_and_the_jobs_bound(tmp_path, env, server, cluster):
    _, client = cluster
    address = client.scheduler.address
    finish(start(study_file(tmp_path, server, limit=2, jobs=3), env, "--backend", "dask", "--scheduler", address))
    assert 1 <= server.peak <= 2 and sum(server.seen.values()) == len(MODELS) * PER_CELL
    server.peak = server.peak_models = 0
    finish(start(study_file(tmp_path, server, limit=8, jobs=1, out="one", cache=False), env, "--backend", "dask",
                 "--scheduler", address))
    assert server.peak_models == 1  # one cell at a time: never two models' calls together


def test_loky_workers_keep_the_provider_limit(tmp_path, env, server):
    finish(start(study_file(tmp_path, server, limit=2, jobs=3), env, "--backend", "loky"))
    assert 1 <= server.peak <= 2 and sum(server.seen.values()) == len(MODELS) * PER_CELL


def test_a_killed_dask_study_stops_its_calls_and_a_rerun_gives_the_threading_records(tmp_path, env, server,
                                                                                      cluster):
    _, client = cluster
    path = study_file(tmp_path, server, limit=2, jobs=3)
    proc = start(path, env, "--backend", "dask", "--scheduler", client.scheduler.address)
    wait_for(lambda: sum(server.seen.values()) >= 10, "10 calls", proc)
    server.gate(answer=0)  # the calls sent from now on wait: the cells cannot finish before they notice
    proc.kill()
    proc.wait()
    out = tmp_path / "out"
    from critique.experiments.study.engines import study_id

    assert distributed.Event(f"critique-{study_id(out)}-noticed").wait(timeout=HANG_S)  # a cell saw the heartbeat stop
    server.open()
    wait_for(lambda: cells_running(client, out, 3) == 0, "the cells stopped")
    wait_for(lambda: server.in_flight == 0, "the calls in flight ended")
    executing = lambda: client.run(lambda dask_worker: dask_worker.state.executing_count)  # noqa: E731
    wait_for(lambda: not any(executing().values()), "the cells' tasks returned")  # nothing can call after this
    calls = sum(server.seen.values())
    assert calls < len(MODELS) * PER_CELL
    finish(start(path, env, "--backend", "dask", "--scheduler", client.scheduler.address))
    reference = study_file(tmp_path, server, limit=2, jobs=3, out="threads")
    finish(start(reference, env))
    mine, theirs = run_dirs(out), run_dirs(tmp_path / "threads")
    assert [p.name for p in mine] == [p.name for p in theirs] and len(mine) == len(MODELS)
    for a, b in zip(mine, theirs):
        assert content(a) == content(b), a.name


def test_an_interrupted_dask_study_waits_for_its_cells_and_reruns_at_once(tmp_path, env, server, cluster):
    _, client = cluster
    from critique.experiments.study.engines import study_id

    path = study_file(tmp_path, server, limit=2, jobs=3)
    server.gate(answer=10)  # then every call waits: the study cannot end before the interrupt lands
    proc = start(path, env, "--backend", "dask", "--scheduler", client.scheduler.address)
    wait_for(lambda: server.holding() > 0, "a held call", proc)
    proc.send_signal(signal.SIGINT)
    if not distributed.Event(f"critique-{study_id(tmp_path / 'out')}-noticed").wait(timeout=HANG_S):
        proc.kill()  # a hang, not a slow machine: a cell sees the word to stop within a second of the study
        pytest.fail(f"no cell reported the stop {HANG_S} s after SIGINT: {proc.communicate()[0]}")
    server.open()
    printed, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "every cell stopped its calls" in printed, printed
    assert cells_running(client, tmp_path / "out", 3) == 0
    printed = finish(start(path, env, "--backend", "dask", "--scheduler", client.scheduler.address))
    assert "0 failed" in printed and "being written by another process" not in printed


def test_a_killed_loky_study_leaves_no_worker_calling(tmp_path, env, server):
    proc = start(study_file(tmp_path, server, limit=2, jobs=3), env, "--backend", "loky")
    wait_for(lambda: sum(server.seen.values()) >= 10, "10 calls", proc)
    workers = descendants(proc.pid)
    assert workers
    server.gate(answer=0)  # the calls sent from now on wait: the cells cannot finish before the kill lands
    proc.kill()
    proc.wait()
    wait_for(lambda: not any(alive(p) for p in workers), "the workers exited")  # no orphan left
    wait_for(lambda: server.in_flight == 0 and server.holding() == 0, "the calls in flight ended")
    server.open()
    assert sum(server.seen.values()) < len(MODELS) * PER_CELL


def test_ray_runs_a_study_on_a_cluster_of_this_machine(tmp_path, env, server):
    """A real local ray cluster (started by the study, more cells at once than this machine has cores): the
    provider limit holds over its worker processes, and a rerun gives the threading backend's records."""
    pytest.importorskip("ray")
    path = study_file(tmp_path, server, limit=2, jobs=3)
    printed = finish(start(path, env, "--backend", "ray"))
    assert "3 cells done" in printed and 1 <= server.peak <= 2
    made = sum(server.seen.values())
    assert "0 to run" in finish(start(path, env, "--backend", "ray")) and sum(server.seen.values()) == made
    threads = study_file(tmp_path, server, limit=2, jobs=3, out="threads")
    finish(start(threads, env))
    assert [sorted(json.loads(line)["request_hash"] for line in (run / "calls.jsonl").read_text().splitlines())
            for run in run_dirs(tmp_path / "out")] == \
        [sorted(json.loads(line)["request_hash"] for line in (run / "calls.jsonl").read_text().splitlines())
         for run in run_dirs(tmp_path / "threads")]


@pytest.mark.parametrize("backend", ["loky", "dask", "ray"])
def test_max_cost_holds_over_the_workers_of_a_study(tmp_path, env, server, cluster, backend):
    """One dollar cap over every cell in every worker process: the spend never passes it, and the cells stop."""
    if backend == "ray":
        pytest.importorskip("ray")
    _, client = cluster
    path = study_file(tmp_path, server, limit=8, jobs=3, cache=False)
    text = path.read_text().replace("\n[[models]]\n", '\n[[models]]\nprice = "1000,1000"\n')
    path.write_text(text.replace("timeout = 120\n", "timeout = 120\nmax_tokens = 100\n"))
    options = ["--backend", backend, "--max-cost", "2"] + (
        ["--scheduler", client.scheduler.address] if backend == "dask" else [])
    proc = start(path, env, *options)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1 and "--max-cost $2 reached" in out, out
    logs = [run / "calls.jsonl" for run in run_dirs(tmp_path / "out") if (run / "calls.jsonl").exists()]
    spent = sum(json.loads(line)["cost_usd"] for log in logs for line in log.read_text().splitlines() if line.strip())
    assert 0 < spent <= 2  # a cell stopped before its first call has no calls.jsonl
