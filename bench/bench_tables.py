"""How long `critique tables` takes on a whole study's logs, against a plain pandas script.

Writes a seeded synthetic log set at the study's scale into a temporary folder (6 models
x 7 datasets, preference data with 10 users, every stage, a suggestibility probe per
model and dataset, and the K / train-size / critique-parts ablations for one model on
the three non-preference datasets; prompts and responses of realistic length), then runs
`critique tables RUN_DIR...` on it as a user would -- a fresh process, so the time
includes interpreter start-up, imports, reading every log, and printing the markdown --
limited to 2 cores, in turns with bench/table1_pandas.py (Table 1 alone, with pandas and
pyarrow, from the same folder): once with its cache of counts emptied before each run (every
log read) and once with it filled by an earlier run (analysis/reading/count_cache.py). Prints the
machine, the commands, the wall-clock and CPU times, and the ratios of the medians
(critique tables / pandas).

    .venv/bin/python bench/bench_tables.py [--repeat 5] [--cores 2] [--keep DIR] [--baseline CHECKOUT] [--inference]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PANDAS = ROOT / "bench" / "table1_pandas.py"
READS = {"cache empty": "reading every log",
         "cache filled": "the counts kept from an earlier run (analysis/reading/count_cache.py)"}
sys.path.insert(0, str(ROOT))

from critique.analysis.synthetic import generate_study  # noqa: E402


def count(runs: list[Path], name: str) -> tuple[int, int]:
    lines = size = 0
    for run in runs:
        data = (run / name).read_bytes()
        lines += data.count(b"\n")
        size += len(data)
    return lines, size


# Runs `critique tables` of the checkout in the working directory, with this Python: the editable
# install's finder (which maps critique.analysis to this tree's analysis/) is taken out, so a
# baseline checkout needs a link critique/analysis -> ../analysis (made by `baseline_ready`).
BOOT = ("import sys, runpy; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
        "str(getattr(f, '__module__', ''))]; sys.path.insert(0, '.'); sys.argv[0] = 'critique'; "
        "runpy.run_module('critique.cli', run_name='__main__', alter_sys=True)")


def baseline_ready(checkout: Path) -> None:
    link = checkout / "critique" / "analysis"
    if (checkout / "analysis").is_dir() and not link.exists():
        link.symlink_to(Path("..") / "analysis")


def command(runs: list[Path], place: Path = ROOT, *extra: str) -> list[str]:
    """`critique tables` of the checkout at `place`, as a fresh process."""
    if place == ROOT:
        return [sys.executable, "-m", "critique.cli", "tables", *map(str, runs), *extra]
    return [sys.executable, "-c", BOOT, "tables", *map(str, runs), *extra]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def limit_cores(cores: int):
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    chosen = set(available[:cores])
    return (lambda: os.sched_setaffinity(0, chosen)) if chosen else None


@dataclass
class Contender:
    """A command timed: where it runs, and its cache folder (CRITIQUE_CACHE_DIR; emptied before each run
    when `empty`: `critique tables` then reads every log, as on its first run over them)."""
    command: list[str]
    cwd: Path
    cache: Path | None = None
    empty: bool = False


def run_once(contender: Contender, cores: int) -> tuple[float, float]:
    """Wall and CPU seconds (all processes) of one run of a command. Bytecode is written (PYTHONDONTWRITEBYTECODE
    unset), so that the first run of each command compiles its modules once, as an installed package has them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if contender.cache is not None:
        if contender.empty:
            shutil.rmtree(contender.cache, ignore_errors=True)
        env["CRITIQUE_CACHE_DIR"] = str(contender.cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(contender.command, cwd=contender.cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, preexec_fn=limit_cores(cores))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"command failed in {contender.cwd} ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def contenders(runs: list[Path], root: Path, caches: Path, baseline: Path | None) -> dict[str, Contender]:
    """This tree's `critique tables` with its cache empty and filled, a baseline checkout's, and the pandas
    script on the folder of the log set."""
    found = {"cache empty": Contender(command(runs), ROOT, caches / "empty", empty=True),
             "cache filled": Contender(command(runs), ROOT, caches / "filled")}
    if baseline:
        found["baseline"] = Contender(command(runs, baseline), baseline, caches / "baseline", empty=True)
    found["pandas"] = Contender([sys.executable, str(PANDAS), str(root)], ROOT)
    return found


def time_turns(commands: dict[str, Contender], repeat: int, cores: int) -> dict[str, list]:
    """(wall, cpu) per run of each command; the commands take turns, so that all meet the same load on
    the machine."""
    times: dict[str, list] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, contender in commands.items():
            times[name].append(run_once(contender, cores))
    return times


def ratios(mine: list, theirs: list) -> str:
    """The ratios of the median wall and CPU times."""
    wall = statistics.median(w for w, _ in mine) / statistics.median(w for w, _ in theirs)
    cpu = statistics.median(c for _, c in mine) / statistics.median(c for _, c in theirs)
    return f"wall {wall:.2f}, CPU {cpu:.2f}"


def summary(times: list) -> str:
    walls = [wall for wall, _ in times]
    cpu = statistics.median(c for _, c in times)
    return f"median {statistics.median(walls):.2f} s, best {min(walls):.2f} s; CPU {cpu:.2f} s per run (all processes)"


def breakdown(runs: list[Path]) -> str:
    """Where the time goes, phase by phase, in this process (wall seconds)."""
    marks = [("start", time.perf_counter())]
    from critique.analysis.reading import read
    from critique.analysis.stats import core as stats

    stats.start_helper()
    try:
        pending = read.start([str(r) for r in runs])
        marks.append(("start stats helper + manifests + read logs (or start readers)", time.perf_counter()))
        from critique.analysis.study import cells, render, tables
        from critique.analysis.reading.load import wait

        logs = wait(pending)
        marks.append(("wait for readers + merge", time.perf_counter()))
        found = cells.from_logs(logs)
        marks.append(("cells", time.perf_counter()))
        render.markdown(tables.build(found), "")
        marks.append(("tables (waiting for the stats helper) + markdown", time.perf_counter()))
    finally:
        stats.stop_helper()
    return ", ".join(f"{name} {t - marks[i][1]:.2f} s" for i, (name, t) in enumerate(marks[1:]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="write the log set here and keep it")
    parser.add_argument("--baseline", metavar="CHECKOUT", type=Path,
                        help="another checkout of this project (e.g. `git worktree add /tmp/old REF`): its "
                             "`critique tables` is timed in turns with this one's, with the same Python")
    parser.add_argument("--inference", action="store_true", help="also time `critique tables --inference`")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-tables-"))
    caches = Path(tempfile.mkdtemp(prefix="bench-tables-cache-"))
    try:
        started = time.perf_counter()
        runs = generate_study(root, seed=args.seed)
        made = time.perf_counter() - started
        calls, calls_size = count(runs, "calls.jsonl")
        predictions, predictions_size = count(runs, "predictions.jsonl")
        if args.baseline:
            baseline_ready(args.baseline)
        commands = contenders(runs, root, caches, args.baseline)
        for contender in commands.values():  # warm the page cache and the bytecode; fill the cache
            run_once(contender, args.cores)
        times = time_turns(commands, args.repeat, args.cores)
        cmd = commands["cache empty"].command
        shown = " ".join(cmd[:4]) + f" {root}/*  ({len(runs)} run directories)"
        print(f"machine:   {cpu_model()}, {os.cpu_count()} cores visible, timed on {args.cores}; "
              f"Python {platform.python_version()}")
        print(f"log set:   {len(runs)} runs, {calls:,} call records ({calls_size / 1e6:,.0f} MB), "
              f"{predictions:,} prediction records ({predictions_size / 1e6:,.0f} MB); generated in {made:.1f} s")
        print(f"command:   {shown}")
        print(f"pandas:    {summary(times['pandas'])}, {PANDAS.relative_to(ROOT)} {root} (Table 1 alone), in "
              f"turns with the runs below over {args.repeat} runs (fresh process each)")
        for name in ("cache empty", "cache filled"):
            print(f"{name}: {summary(times[name])} (start-up, imports, {READS[name]}, every table, markdown); "
                  f"ratio this / pandas: {ratios(times[name], times['pandas'])}")
        if args.baseline:
            print(f"baseline:  {summary(times['baseline'])}, {args.baseline}; ratio this (cache empty) / "
                  f"baseline: {ratios(times['cache empty'], times['baseline'])}")
        if args.inference:
            inference = Contender(command(runs, ROOT, "--inference"), ROOT, caches / "filled")
            inferred = time_turns({"inference": inference}, args.repeat, args.cores)["inference"]
            print(f"inference: {summary(inferred)} over {args.repeat} runs of `critique tables --inference` "
                  "(the same, with the item-level tables)")
        os.environ["CRITIQUE_CACHE_DIR"] = str(caches / "phases")
        print(f"phases:    {breakdown(runs)} (one more run, in this process, its cache empty)")
        print(f"load:      {os.getloadavg()[0]:.2f} (1-minute load average; other work on the machine slows this)")
    finally:
        shutil.rmtree(caches, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
