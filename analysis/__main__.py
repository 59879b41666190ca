"""`python -m critique.analysis tables|report ...`: the same as `critique tables|report ...`."""

from __future__ import annotations

import argparse
import sys

from critique.analysis import cli


def main(argv: list[str] | None = None) -> int:
    from critique.base.errors import UserError

    parser = argparse.ArgumentParser(prog="python -m critique.analysis", description=cli.__doc__.splitlines()[0])
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"critique: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
