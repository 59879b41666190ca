"""How long `critique tables` takes on a whole study's logs.

Writes a seeded synthetic log set at the study's scale into a temporary folder (6 models
x 7 datasets, preference data with 10 users, every stage, a suggestibility probe per
model and dataset, and the K / train-size / critique-parts ablations for one model on
the three non-preference datasets; prompts and responses of realistic length), then runs
`critique tables RUN_DIR...` on it as a user would -- a fresh process, so the time
includes interpreter start-up, imports, reading every log, and printing the markdown --
limited to 2 cores. Prints the machine, the command and the wall-clock times.

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def run_once(cmd: list[str], cwd: Path, cores: int) -> tuple[float, float]:
    """Wall and CPU seconds (all processes) of one run of `cmd` in `cwd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          preexec_fn=limit_cores(cores))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"command failed in {cwd} ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def time_runs(runs: list[Path], repeat: int, cores: int, baseline: Path | None = None,
              *extra: str) -> dict[Path, list]:
    """(wall, cpu) per run, per checkout; with a baseline checkout the two take turns, so that both
    meet the same load on the machine."""
    places = [ROOT] + ([baseline] if baseline else [])
    times: dict[Path, list] = {place: [] for place in places}
    for _ in range(repeat):
        for place in places:
            times[place].append(run_once(command(runs, place, *extra), place, cores))
    return times


def summary(times: list) -> str:
    walls = [wall for wall, _ in times]
    cpu = statistics.median(c for _, c in times)
    return f"median {statistics.median(walls):.2f} s, best {min(walls):.2f} s; CPU {cpu:.2f} s per run (all processes)"


def breakdown(runs: list[Path]) -> str:
    """Where the time goes, phase by phase, in this process (wall seconds)."""
    marks = [("start", time.perf_counter())]
    from critique.analysis import read, stats

    stats.start_helper()
    try:
        pending = read.start([str(r) for r in runs])
        marks.append(("start scipy helper + manifests + read logs (or start readers)", time.perf_counter()))
        from critique.analysis import cells, render, tables
        from critique.analysis.load import wait

        logs = wait(pending)
        marks.append(("wait for readers + merge", time.perf_counter()))
        found = cells.from_logs(logs)
        marks.append(("cells", time.perf_counter()))
        render.markdown(tables.build(found), "")
        marks.append(("tables (waiting for scipy) + markdown", time.perf_counter()))
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
    try:
        started = time.perf_counter()
        runs = generate_study(root, seed=args.seed)
        made = time.perf_counter() - started
        calls, calls_size = count(runs, "calls.jsonl")
        predictions, predictions_size = count(runs, "predictions.jsonl")
        cmd = command(runs)
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm the page cache
        if args.baseline:
            baseline_ready(args.baseline)
        times = time_runs(runs, args.repeat, args.cores, args.baseline)
        shown = " ".join(cmd[:4]) + f" {root}/*  ({len(runs)} run directories)"
        print(f"machine:   {cpu_model()}, {os.cpu_count()} cores visible, timed on {args.cores}; "
              f"Python {platform.python_version()}")
        print(f"log set:   {len(runs)} runs, {calls:,} call records ({calls_size / 1e6:,.0f} MB), "
              f"{predictions:,} prediction records ({predictions_size / 1e6:,.0f} MB); generated in {made:.1f} s")
        print(f"command:   {shown}")
        print(f"this tree: {summary(times[ROOT])} over {args.repeat} runs (fresh process each: start-up, imports, "
              "reading every log, tables, markdown)")
        if args.baseline:
            ratio = statistics.median(w for w, _ in times[ROOT]) / statistics.median(w for w, _ in times[args.baseline])
            print(f"baseline:  {summary(times[args.baseline])}, {args.baseline} (runs taken in turns with this "
                  f"tree's); median wall time ratio this / baseline: {ratio:.2f}")
        if args.inference:
            inferred = time_runs(runs, args.repeat, args.cores, None, "--inference")[ROOT]
            print(f"inference: {summary(inferred)} over {args.repeat} runs of `critique tables --inference` "
                  "(the same, with the item-level tables)")
        print(f"phases:    {breakdown(runs)} (one more run, in this process)")
        print(f"load:      {os.getloadavg()[0]:.2f} (1-minute load average; other work on the machine slows this)")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
