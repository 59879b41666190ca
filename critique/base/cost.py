"""The cost line: what a command that makes LLM calls says on stderr before its first call.

One shape for every command::

    critique: cost: at most N calls (<what they are>); those already in <run dir>/calls.jsonl are not made again
    critique: cost: dollars: at most $X (...), likely $Y (...)

The second line, when the command gives one, is the calls' cost in dollars (critique.engine.cost_estimate).

``exact`` drops "at most" (a count of the very requests the command will make); each run directory
named adds its log to the tail ("... in A/calls.jsonl or B/calls.jsonl ..."), none drops the tail."""

from __future__ import annotations

import sys
from pathlib import Path

from critique.base.rundir import CALLS

PREFIX = "critique: cost: "


def cost_line(calls: int, parts: str, *logs: Path, exact: bool = False) -> str:
    """The cost line of ``calls`` calls: ``parts`` says what they are, ``logs`` are the run directories
    whose logged requests are answered from their log (not made again)."""
    tail = f"; those already in {' or '.join(str(Path(d) / CALLS) for d in logs)} are not made again" if logs else ""
    return f"{PREFIX}{'' if exact else 'at most '}{calls} calls ({parts}){tail}"


def print_cost(calls: int, parts: str, *logs: Path, exact: bool = False, dollars: str | None = None) -> None:
    """Print the cost line on stderr, and ``dollars`` (what the calls cost) on a line of its own."""
    print(cost_line(calls, parts, *logs, exact=exact), file=sys.stderr)
    if dollars:
        print(f"{PREFIX}{dollars}", file=sys.stderr)
