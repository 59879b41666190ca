"""`critique run`: one dataset against one model, all strategies, then the accuracy table.

Exit status 1 when some prediction ended in an error (a failed call): its accuracy is not the
model's, and running the command again retries those calls."""

from __future__ import annotations

from pathlib import Path

from critique.cli.options import add_run_options, config_from_args


def register(sub) -> None:
    p = sub.add_parser("run", help="train stage + test stage for one dataset and one model")
    add_run_options(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.engine.scores import print_table, report_errors
    from critique.runner import default_out, execute_run

    config = config_from_args(args)
    out = Path(args.out) if args.out else default_out(config)
    outcome, _ = execute_run(config, out, progress=not args.quiet)
    errors = print_table(out)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return report_errors([out], errors)
