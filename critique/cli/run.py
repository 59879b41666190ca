"""`critique run`: one dataset against one model, all strategies, then the accuracy table.

Exit status 1 when some prediction ended in an error (a failed call): its accuracy is not the
model's, and running the command again retries those calls."""

from __future__ import annotations

import sys
from pathlib import Path

from critique.cli.options import add_run_options, config_from_args


def register(sub) -> None:
    p = sub.add_parser("run", help="train stage + test stage for one dataset and one model")
    add_run_options(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.engine.scores import print_table
    from critique.runner import default_out, execute_run

    config = config_from_args(args)
    out = Path(args.out) if args.out else default_out(config)
    outcome, _ = execute_run(config, out, progress=not args.quiet)
    errors = print_table(out)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    if errors:
        shown = ", ".join(f"{count} in {stage}" for stage, count in sorted(errors.items()))
        print(f"critique: error: {sum(errors.values())} predictions ended in an error ({shown}), not in an answer of "
              f"the model: they count wrong; see the error field in {out / 'predictions.jsonl'}. Run the same command "
              "again to retry them", file=sys.stderr)
        return 1
    return 0
