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


# Seconds a cache read or write waits for another process's lock on the cache before it goes on without it.
CACHE_WAIT_S = 60.0
MOUNTS = "/proc/mounts"  # the mount table read by network_filesystem (Linux)
# File systems that more than one host may share: SQLite's WAL mode (the caches) is not safe on them.
NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "lustre", "gpfs", "ceph",
                       "glusterfs", "fuse.glusterfs", "beegfs", "afs", "fuse.s3fs", "fuse.gcsfuse")


def network_filesystem(path: str | Path) -> str | None:
    """The type of the network file system ``path`` lies on (the mount table's longest matching mount point),
    or None: a local one, or no mount table to read."""
    try:
        lines = Path(MOUNTS).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    where = str(Path(path).resolve())
    best, kind = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        if (where == mount or where.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
            best, kind = mount, fields[2]
    return kind if kind in NETWORK_FILESYSTEMS else None


def check_cache_location(folder: str | Path) -> None:
    """ValueError when the cache folder lies on a network file system: the caches are SQLite databases in WAL
    mode, whose shared-memory index only works for processes of one host (docs/network-filesystems.md)."""
    kind = network_filesystem(folder)
    if kind is not None:
        raise ValueError(f"the cache {folder} is on a network file system ({kind}): its SQLite databases (WAL mode) "
                         "are not safe there; give --cache-dir (or CRITIQUE_CACHE_DIR) a local disk, or --no-cache")


def cache_trouble(error: BaseException, database: str | Path | None = None) -> str:
    """What a SQLite error of a cache means: "busy" (another process holds its lock past the wait), "unwritable"
    (a read-only file or folder), "corrupt" (the file fails SQLite's integrity check, or is no database), or
    "transient" (it passes the check: the error was the moment's). Only a corrupt cache is set aside; with any
    other, the cache is left as it is and the call goes on without it."""
    import sqlite3

    text = str(error).lower()
    if isinstance(error, sqlite3.OperationalError):
        if _locked(error):
            return "busy"
        if "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
            return "unwritable"
    if database is None or not Path(database).exists():
        return "corrupt"
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            verdict = db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.OperationalError as exc:  # locked while checking: busy, not corrupt
        return "busy" if _locked(exc) else "corrupt"
    except sqlite3.DatabaseError:
        return "corrupt"
    return "corrupt" if not verdict or verdict[0] != "ok" else "transient"


def _locked(error: BaseException) -> bool:
    """SQLite's word that another connection holds the lock."""
    text = str(error).lower()
    return "locked" in text or "busy" in text


def say_cache_skipped(what: str, path: str | Path, trouble: str, error: BaseException) -> None:
    """One warning line: the cache ``what`` at ``path`` is busy or unwritable, so a call goes on without it."""
    why = {"busy": "held by another process past the wait", "unwritable": "not writable"}.get(trouble, "failing")
    print(f"critique: warning: the {what} {path} is {why} ({type(error).__name__}: {error}); going on without it "
          "(nothing is lost: it only saves calls)", file=sys.stderr)


def set_aside(path: str | Path, error: BaseException, what: str) -> Path:
    """Move an unreadable cache (a file or a folder) out of the way, so that it is rebuilt, and
    say so in one line: the cache only saves calls, a run never needs it."""
    path = Path(path)
    moved = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(path, moved)
    print(f"critique: warning: the {what} {path} is unreadable ({type(error).__name__}: {error}); moved to "
          f"{moved} and rebuilt empty (delete it once you no longer need it)", file=sys.stderr)
    return moved
