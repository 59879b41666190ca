"""What collapses a small model's answers: the same prompts answered three ways by an embedded model.

Reads the EP_LABEL test prompts of shipped control-pos runs (the exact messages each run sent, from its
calls.jsonl) and answers each again with the embedded model:
- `grammar`: greedy decoding under the JSON grammar of the answer schema (`--answer-by generate`, as the runs do);
- `free`: greedy decoding with no grammar at all, the option read from the text as the harness reads a reply
  (critique.engine.parsing.extract_answer; a reply that names no option counts as a parse failure);
- `loglikelihood`: each option's reply scored after the prompt, the best taken (`--answer-by loglikelihood`).
Prints, per run and way, the accuracy against the gold labels, the parse failures and how the answers spread
over the options (a collapsed model gives one option to nearly everything). Prints the machine and the command.

    .venv/bin/python bench/bench_grammar.py [--model local/qwen2.5-coder-0.5b] [--items 40] \
        [RUN_DIR ...]   (default: the shipped control-pos runs of logs/)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from critique.datasets.splits import answer_schema  # noqa: E402
from critique.engine.parsing import extract_answer  # noqa: E402

RUNS = [ROOT / "logs" / "control-pos__local_smollm2", ROOT / "logs" / "control-pos__local_qwen2.5-coder-0.5b"]
SPACE = ["1", "2", "3", "4"]
FREE_TOKENS = 64


def prompts(run_dir: Path, items: int) -> list[tuple[list, str]]:
    """(messages, gold) of the run's first `items` EP_LABEL test calls."""
    gold = {}
    for line in (run_dir / "predictions.jsonl").open():
        row = json.loads(line)
        if row["stage"] == "test" and row["strategy"] == "EP_LABEL":
            gold[row["item_id"]] = row["gold"]
    out = []
    for line in (run_dir / "calls.jsonl").open():
        row = json.loads(line)
        if row["stage"] == "test" and row["strategy"] == "EP_LABEL" and row["item_id"] in gold:
            out.append((row["messages"], gold.pop(row["item_id"])))
        if len(out) == items:
            break
    return out


def layout(run_dir: Path) -> str:
    config = json.loads((run_dir / "manifest.json").read_text())["config"]
    return f"{run_dir.name} ({config.get('prompts', 'paper')}, {config.get('example_order', 'nearest-first')})"


def answer(llm, model: str, messages: list, way: str) -> str | None:
    if way == "loglikelihood":
        return json.loads(llm.score(model, messages, SPACE)["text"])["answer"]
    params = {"temperature": 0.0, "max_tokens": FREE_TOKENS if way == "free" else 64, "seed": 0}
    if way == "grammar":
        params["response_format"] = {"type": "json_schema",
                                     "json_schema": {"name": "answer", "schema": answer_schema(SPACE)}}
    reply = llm.completion(model, messages, optional_params=params).choices[0].message.content
    return extract_answer(reply, SPACE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, default=RUNS)
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--items", type=int, default=40)
    args = parser.parse_args()
    from critique.llm import local

    llm = local.handler()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"command: {' '.join(sys.argv)}")
    print("| prompts of | model | way | n | accuracy % | parse failures | answers 1/2/3/4 |")
    print("|---|---|---|---:|---:|---:|---|")
    for run_dir in args.runs:
        asked = prompts(run_dir, args.items)
        for way in ("grammar", "free", "loglikelihood"):
            answers = [answer(llm, args.model, messages, way) for messages, _ in asked]
            right = sum(a == gold for a, (_, gold) in zip(answers, asked))
            spread = collections.Counter(answers)
            print(f"| {layout(run_dir)} | {args.model} | {way} | {len(asked)} | {100 * right / len(asked):.1f} "
                  f"| {spread[None]} | {'/'.join(str(spread[o]) for o in SPACE)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
