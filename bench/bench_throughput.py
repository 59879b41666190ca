"""Throughput of the test stage against a local server with a fixed latency per call.

    .venv/bin/python bench/bench_throughput.py            # C in 1 8 32 64, L = 0.2 s
    .venv/bin/python bench/bench_throughput.py --latency 0.2 --concurrency 1 8 32 64 --repeat 3
    .venv/bin/python bench/bench_throughput.py --latency 1.0 --concurrency 32 128 256 --call-processes 2

The server (tests/faults/server.py, no faults) runs in its own process and answers every
call after exactly L seconds, so with C calls in flight the physical limit is C / L calls per
second. For each C the script opens a fresh run (the real `critique run` code path: Run,
litellm, response cache, JSON-lines logs) on a generated dataset of 16 * C test items
(at least 64), runs the train stage untimed, then times the test stage of `zero_shot`
(one call per item) and reports achieved / limit, and the client's CPU time per call: the
run's process, plus its call processes with ``--call-processes N`` (each column separately),
and the server's.

It then times two reruns that make no call, per 1,000 items: resuming the finished run
directory (everything is in the logs), and the same run in a new directory with a warm
response cache (every answer from the cache, every record written again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")

TRAIN = 8
WORDS = ("price rating distance stock colour weight brand season size review origin warranty delivery "
         "battery storage screen speed noise comfort style budget priority condition first second third").split()


def make_dataset(folder: Path, n_test: int, seed: int = 0) -> None:
    """A four-option ranking-like dataset with distinct questions of about 120 words."""
    from critique.datasets.splits import DatasetCard, Item, write_dataset

    rng = random.Random(seed)

    def item(i: int, split: str) -> Item:
        body = " ".join(rng.choice(WORDS) for _ in range(110))
        question = (f"Item set {split}-{i}. Rank the five products A-E under the conditions, most important "
                    f"first: {body}\nOptions:\n1. A B C D E\n2. B A C E D\n3. C B A D E\n4. E D C B A")
        return Item(id=f"{split}-{i}", question=question, answer=rng.choice(["1", "2", "3", "4"]))

    card = DatasetCard(name="bench", task="Pick the ordering that satisfies the conditions.",
                       answer_space=["1", "2", "3", "4"], description="generated for bench_throughput.py")
    write_dataset(folder, card, [item(i, "train") for i in range(TRAIN)], [item(i, "test") for i in range(n_test)])


class Server:
    def __init__(self, latency: float):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "faults" / "server.py"),
                                      "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def requests(self) -> int:
        with urllib.request.urlopen(self.url.rsplit("/v1", 1)[0] + "/stats") as reply:
            return json.load(reply)["requests"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def config(data: Path, url: str, concurrency: int, cache: Path, limit: int, processes: int = 0):
    from critique.base.config import RunConfig

    return RunConfig(dataset=str(data), model="openai/bench-model", strategies=["zero_shot"], k=3, limit=limit,
                     api_base=url, concurrency=concurrency, cache_dir=str(cache), timeout=60, num_retries=0,
                     call_processes=processes)


def cpu_of(pids) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def one(data: Path, server: Server, work: Path, concurrency: int, latency: float, embeddings: Path,
        processes: int = 0) -> dict:
    from critique.runner import prepare

    n = max(64, 16 * concurrency)
    cache = work / f"cache-c{concurrency}"
    cache.mkdir(parents=True)
    shutil.copy(embeddings, cache / embeddings.name)
    cfg = config(data, server.url, concurrency, cache, n, processes)
    out = work / f"run-c{concurrency}"
    run = prepare(cfg, out, progress=False)
    before = None
    try:
        async def go():
            nonlocal before
            memory = await run.train_stage()  # starts the call processes, if any (untimed)
            before = server.requests()
            workers = run.llm._processes.pids() if run.llm._processes is not None else []
            wall, cpu = time.perf_counter(), time.process_time()
            others = (cpu_of(workers), cpu_of([server.proc.pid]))
            await run.test_stage(memory)
            others = (cpu_of(workers) - others[0], cpu_of([server.proc.pid]) - others[1])
            return time.perf_counter() - wall, time.process_time() - cpu, *others

        wall, cpu, workers_cpu, server_cpu = asyncio.run(go())
    finally:
        run.close(True)
        run.llm.close()
    calls = server.requests() - before
    assert calls == n, (calls, n)
    limit = concurrency / latency
    achieved = n / wall
    items = n + TRAIN

    # a rerun of the finished run directory: every call and prediction is in its logs
    started = time.perf_counter()
    rerun = prepare(cfg, out, progress=False)
    asyncio.run(rerun.execute())
    rerun.close(True)
    rerun.llm.close()
    resume = time.perf_counter() - started
    assert rerun.llm.calls_made == 0

    # the same run in a new directory: every answer from the response cache, every record written again
    started = time.perf_counter()
    fresh = prepare(cfg, work / f"run-c{concurrency}-again", progress=False)
    asyncio.run(fresh.execute())
    fresh.close(True)
    fresh.llm.close()
    from_cache = time.perf_counter() - started
    assert fresh.llm.calls_made == 0 and server.requests() - before == n
    return {"C": concurrency, "items": n, "seconds": wall, "achieved": achieved, "limit": limit,
            "ratio": achieved / limit, "cpu_ms_per_call": 1000 * cpu / n,
            "workers_cpu_ms_per_call": 1000 * workers_cpu / n, "server_cpu_ms_per_call": 1000 * server_cpu / n,
            "resume_s_per_1000": 1000 * resume / items, "cache_s_per_1000": 1000 * from_cache / items}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call at the server (default 0.2)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--repeat", type=int, default=1, help="runs per C; the median is reported")
    parser.add_argument("--call-processes", type=int, default=0,
                        help="worker processes that make the calls (the run option; default 0: the run's own)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--embeddings", help="a folder that keeps the questions' embeddings between invocations "
                                             "(the dataset is the same for the same largest C); untimed either way")
    args = parser.parse_args()

    from critique.base.config import DEFAULT_ENCODER
    from critique.engine.memory.embed import Encoder

    load_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    server = Server(args.latency)
    try:
        data = work / "data"
        make_dataset(data, max(64, 16 * max(args.concurrency)))
        from critique.datasets.splits import load_dataset

        dataset = load_dataset(data)
        warm = Path(args.embeddings) if args.embeddings else work / "warm"
        print(f"embedding {len(dataset.train) + len(dataset.test)} questions once (untimed) ...", flush=True)
        Encoder(DEFAULT_ENCODER, warm).encode([i.question for i in dataset.train + dataset.test])
        load = os.getloadavg()
        rows = []
        for c in args.concurrency:
            runs = [one(data, server, work / f"r{r}", c, args.latency, warm / "embeddings.sqlite",
                        args.call_processes) for r in range(args.repeat)]
            row = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            rows.append(row)
            print(f"C={c:>3}: {row['items']:>5.0f} calls in {row['seconds']:6.2f} s = {row['achieved']:6.1f}/s, "
                  f"limit {row['limit']:5.0f}/s, achieved/limit {row['ratio']:.2f}, "
                  f"client CPU {row['cpu_ms_per_call']:.1f} ms/call (+ call processes "
                  f"{row['workers_cpu_ms_per_call']:.1f}), server CPU {row['server_cpu_ms_per_call']:.1f}", flush=True)
        load_after = os.getloadavg()
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {load_start[0]:.1f} at the start, {load[0]:.1f} before the timed runs (after the "
          f"untimed embedding), {load_after[0]:.1f} after; L = {args.latency} s; "
          f"call processes {args.call_processes}\n")
    print("| C | items | limit (calls/s) | achieved (calls/s) | achieved / limit | client CPU per call (ms) "
          "| call processes' CPU per call (ms) | server CPU per call (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['C']} | {r['items']:.0f} | {r['limit']:.0f} | {r['achieved']:.1f} | {r['ratio']:.2f} "
              f"| {r['cpu_ms_per_call']:.1f} | {r['workers_cpu_ms_per_call']:.1f} "
              f"| {r['server_cpu_ms_per_call']:.1f} |")
    print("\nRerun with zero calls, seconds per 1,000 items (train + test items of the run):\n")
    print("| C | resume the finished run directory | new run directory, warm response cache |")
    print("|---:|---:|---:|")
    for r in rows:
        print(f"| {r['C']} | {r['resume_s_per_1000']:.2f} | {r['cache_s_per_1000']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"latency": args.latency, "call_processes": args.call_processes,
                                               "load": [load_start, load, load_after], "rows": rows},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
