"""The `critique` command: run, datasets, tables, report, probe, ablate, study, verify, deinflate, credit, stream,
memory."""

from __future__ import annotations

import argparse
import os
import sys

from critique.base.command import set_command
from critique.base.errors import RunError, UserError


def build_parser() -> argparse.ArgumentParser:
    from critique.analysis import cli as analysis
    from critique.cli import ablate, credit, datasets, deinflate, memory, methods, probe, run, stream, study, verify

    parser = argparse.ArgumentParser(prog="critique", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (run, datasets, probe, ablate, study, credit, verify, deinflate, stream, memory, methods,
                    analysis):
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from critique.datasets.splits import DatasetError
    from critique.llm.spend import SpendCapReached

    args = build_parser().parse_args(argv)
    set_command(sys.argv[1:] if argv is None else argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, DatasetError, FileNotFoundError) as exc:
        from critique.base.rundir import redact

        print(f"critique: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except RunError as exc:  # a run that cannot go on (a full disk): what to do, in one line
        from critique.base.rundir import redact

        print(f"critique: error: {redact(str(exc))}", file=sys.stderr)
        return 1
    except SpendCapReached as exc:  # --max-cost: stopped cleanly before the call that could pass it
        print(f"critique: stopped: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("critique: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        set_command(None)


if __name__ == "__main__":
    sys.exit(main())


def main_exit() -> None:
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (`critique ... | head`): what it read is all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush does not fail too
        sys.exit(1)
