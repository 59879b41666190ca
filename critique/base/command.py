"""The command line of the `critique` command this process runs (``critique.cli.main`` says it), for the manifest
of the run directories it opens; None when the package is used from Python (the Learner, a library call)."""

from __future__ import annotations

_COMMAND: list[str] | None = None


def set_command(argv: list[str] | None) -> None:
    global _COMMAND
    _COMMAND = None if argv is None else ["critique", *map(str, argv)]


def command() -> list[str] | None:
    """``["critique", ARG, ...]`` of the running command, or None."""
    return list(_COMMAND) if _COMMAND is not None else None
