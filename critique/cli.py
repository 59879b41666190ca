"""The `critique` command: run, datasets, tables, report, probe, ablate, study."""

from __future__ import annotations

import argparse
import sys


class UserError(Exception):
    """Bad input: printed as one line, exit status 2, nothing written."""


def build_parser() -> argparse.ArgumentParser:
    from critique import probe_cli, run_cli
    from critique.datasets import cli as datasets_cli

    parser = argparse.ArgumentParser(prog="critique", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_cli.register(sub)
    datasets_cli.register(sub)
    probe_cli.register(sub)
    try:
        from analysis import cli as analysis_cli
    except ImportError:  # the analysis package is not installed beside the library
        analysis_cli = None
    if analysis_cli is not None:
        analysis_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from critique.datasets.splits import DatasetError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, DatasetError, FileNotFoundError) as exc:
        from critique.logs import redact

        print(f"critique: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("critique: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())


def main_exit() -> None:
    sys.exit(main())
