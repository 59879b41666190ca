"""Where critique keeps things: one cache root for responses, embeddings, models, built
datasets and raw upstream files, each folder overridable on its own."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def cache_root() -> Path:
    """$CRITIQUE_CACHE_DIR, or ~/.cache/critique."""
    return Path(os.environ.get("CRITIQUE_CACHE_DIR") or Path.home() / ".cache" / "critique")


def cache_dir(explicit: str | Path | None = None) -> Path:
    """The response, embedding and model cache: --cache-dir, or the cache root."""
    return Path(explicit) if explicit else cache_root()


def _folder(explicit: str | Path | None, variable: str, name: str) -> Path:
    if explicit:
        return Path(explicit)
    if os.environ.get(variable):
        return Path(os.environ[variable])
    return cache_root() / name


def data_dir(explicit: str | Path | None = None) -> Path:
    """Where built splits live: --data-dir, $CRITIQUE_DATA_DIR, or datasets/ under the cache root."""
    return _folder(explicit, "CRITIQUE_DATA_DIR", "datasets")


def raw_dir(explicit: str | Path | None = None) -> Path:
    """Where raw upstream files are: --to/--raw, $CRITIQUE_RAW_DIR, or raw/ under the cache root."""
    return _folder(explicit, "CRITIQUE_RAW_DIR", "raw")


def set_aside(path: str | Path, error: BaseException, what: str) -> Path:
    """Move an unreadable cache (a file or a folder) out of the way, so that it is rebuilt, and
    say so in one line: the cache only saves calls, a run never needs it."""
    path = Path(path)
    moved = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(path, moved)
    print(f"critique: warning: the {what} {path} is unreadable ({type(error).__name__}: {error}); moved to "
          f"{moved} and rebuilt empty (delete it once you no longer need it)", file=sys.stderr)
    return moved
