"""Answers by log-likelihood per second from the embedded model: one process on every core, against one process
per core at once (how long runs share a machine).

Each layout answers the same number of prompts (a question of ``--sentences`` sentences, options 1-4, each prompt
different so no cache answers it; the prompt's tokens, by the model's own count, are printed) with
`critique.llm.local`'s scorer, as `--answer-by loglikelihood` does. A process loads the model first and is timed
from its first prompt to its last; a layout's rate is its prompts over the time from the first start to the last
end. The layouts alternate, ``--repeat`` times each, and the ratio of the median rates is printed: only figures
taken in turns compare on a machine whose speed drifts.

    .venv/bin/python bench/bench_embedded.py [--model smollm2] [--prompts 12] [--sentences 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "Item {i} is ranked by its priority, its weight and the order the conditions list them in. "


def cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def messages(index: int, sentences: int) -> list[dict]:
    """A question of ``sentences`` sentences, different for each ``index``."""
    body = "".join(SENTENCE.format(i=f"{index}-{i}") for i in range(max(1, sentences)))
    return [{"role": "user", "content": f"{body}\nWhich option comes first: 1, 2, 3 or 4?"}]


def worker(model: str, first: int, count: int, sentences: int) -> dict:
    """Answer ``count`` prompts in this process (its affinity as started); the seconds from first to last."""
    sys.path.insert(0, str(ROOT))
    from critique.llm import local

    llm = local.LocalLLM()
    llm.score(f"local/{model}", messages(-1, 2), ["1", "2", "3", "4"])  # load the model: untimed
    start = time.time()
    for index in range(first, first + count):
        llm.score(f"local/{model}", messages(index, sentences), ["1", "2", "3", "4"])
    return {"start": start, "end": time.time(), "prompts": count, "threads": local.threads()}


def layout(model: str, processes: list[list[int]], prompts: int, sentences: int) -> dict:
    """Run one process per core set of ``processes`` at once, splitting ``prompts`` between them."""
    share = prompts // len(processes)
    started = []
    for n, core_set in enumerate(processes):
        command = [sys.executable, __file__, "--worker", str(n * share), str(share), "--model", model,
                   "--sentences", str(sentences)]
        started.append(subprocess.Popen(["taskset", "-c", ",".join(map(str, core_set)), *command],
                                        stdout=subprocess.PIPE, text=True))
    results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in started]
    seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {"rate": sum(r["prompts"] for r in results) / seconds, "seconds": seconds,
            "threads": [r["threads"] for r in results]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="an embedded model's name, as local/NAME")
    parser.add_argument("--prompts", type=int, default=12, help="prompts per layout (split between its processes)")
    parser.add_argument("--sentences", type=int, default=50, help="the length of each prompt")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", nargs=2, type=int, metavar=("FIRST", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.model, *args.worker, args.sentences)))
        return 0
    available = cores()
    layouts = {"one process, every core": [available], "one process per core": [[c] for c in available]}
    sys.path.insert(0, str(ROOT))
    from critique.llm.local import count_tokens

    tokens = count_tokens(args.model, messages(0, args.sentences))
    print(f"machine: {platform.processor() or platform.machine()}, {len(available)} cores available, "
          f"Python {platform.python_version()}; model local/{args.model}, {args.prompts} prompts of {tokens} "
          f"tokens (its tokenizer, chat template included) per layout")
    print(f"command: {Path(sys.executable).name} {' '.join([str(Path(sys.argv[0])), *sys.argv[1:]])}")
    rates: dict[str, list[float]] = {name: [] for name in layouts}
    for turn in range(args.repeat):
        for name, processes in layouts.items():
            done = layout(args.model, processes, args.prompts, args.sentences)
            rates[name].append(done["rate"])
            print(f"turn {turn + 1}: {name} (threads {done['threads']}): {done['rate']:.3f} prompts/s "
                  f"({done['seconds']:.1f} s)")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in medians.items():
        print(f"median: {name}: {value:.3f} prompts/s")
    one, split = medians.values()
    print(f"ratio (one process on every core / one per core): {one / split:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
