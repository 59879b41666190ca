"""The errors a user sees as one line (exit status 2, nothing written)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: printed as one line, exit status 2, nothing written."""


class RunError(Exception):
    """A run that cannot start or go on (lock held, run directory of another config)."""


class UnreadableFile(RunError, ValueError):
    """A file of a run directory that is not what the project writes there (not UTF-8 JSON of the right shape)."""


class Stopped(BaseException):
    """The run was told to stop (its study was interrupted or is gone): no further call is made.
    A BaseException, like KeyboardInterrupt, so that no retry loop or error record takes it for a
    failed call."""
