"""Episodic memory at scale: build, save and load a memory of P user pools of 10 entries each (random unit
vectors of 384 dimensions, as all-MiniLM-L6-v2 gives), for P = 1,000, 2,000 and 4,000, and print the seconds and
their ratio to the smallest P. Linear in the entries means a ratio near P / 1,000.

    .venv/bin/python bench/bench_memory.py [--pools 1000,2000,4000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from critique.engine.memory.episodic import EpisodicMemory

ENTRIES_PER_POOL = 10
DIMENSIONS = 384


def memory_of(pools: int, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    entries = [{"id": f"u{p}/i{i}", "item_id": f"i{i}", "user": f"u{p}", "question": f"question {i} of user {p}"}
               for p in range(pools) for i in range(ENTRIES_PER_POOL)]
    vectors = rng.standard_normal((len(entries), DIMENSIONS)).astype(np.float32)
    return entries, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def timed(pools: int) -> tuple[float, float]:
    """(seconds to build and save, seconds to load) one memory of ``pools`` pools."""
    entries, vectors = memory_of(pools)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        EpisodicMemory(entries, vectors).save(Path(folder))
        built = time.perf_counter() - started
        started = time.perf_counter()
        EpisodicMemory.load(Path(folder), encoder=None)
        return built, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="1000,2000,4000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(p) for p in args.pools.split(",")]
    medians = {}
    for pools in sizes:
        runs = [timed(pools) for _ in range(args.repeat)]
        medians[pools] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    first = sizes[0]
    print("| pools | entries | build + save, s | ratio | load, s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for pools in sizes:
        built, loaded = medians[pools]
        print(f"| {pools:,} | {pools * ENTRIES_PER_POOL:,} | {built:.2f} | {built / medians[first][0]:.2f} "
              f"| {loaded:.2f} | {loaded / medians[first][1]:.2f} |")


if __name__ == "__main__":
    main()
