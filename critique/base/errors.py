"""The errors a user sees as one line (exit status 2, nothing written)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: printed as one line, exit status 2, nothing written."""


class RunError(Exception):
    """A run that cannot start or go on (lock held, run directory of another config)."""


class Stopped(BaseException):
    """The run was told to stop (its study was interrupted or is gone): no further call is made.
    A BaseException, like KeyboardInterrupt, so that no retry loop or error record takes it for a
    failed call."""
