"""The shared response cache (diskcache, SQLite in WAL mode), as the LLM client uses it: a call's reply
by its request hash. It only saves calls, so no trouble with it stops a run:

- busy (another process holds the lock past the wait, critique.base.paths.CACHE_WAIT_S), unwritable (a
  read-only cache) or failing for a moment: the call goes on without the cache, said once in a warning line,
  and the cache is left as it is;
- corrupt (the file fails SQLite's integrity check, or is no database): it is set aside
  (``<folder>.corrupt-<time>``) and rebuilt empty, said in one line.

Its size is bounded (``size_limit`` bytes: --cache-size-gb, 8 by default; diskcache's least-recently-stored
eviction): ``evictions`` counts the entries this process's writes evicted, and the client says so when it closes.

Nothing in it is ever unpickled: diskcache's own Disk pickles values and unpickles them when read, so a file
planted in a shared cache folder would run code. Keys and values here are text (a reply is stored as JSON),
through ``TextDisk``, which refuses a row stored as a pickle instead of loading it. A cache that holds such a row
(one written by an older version, or planted) is unreadable: it is set aside and rebuilt empty, said once.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

from critique.base import paths
from critique.base.paths import cache_trouble, say_cache_skipped, set_aside

WHAT = "response cache"
MODE_PICKLE = 4  # diskcache's mode of a value stored as a pickle (diskcache.core.MODE_PICKLE)


class PickledEntry(ValueError):
    """A cache row stored as a pickle: never loaded."""


@functools.cache
def text_disk():
    """diskcache's Disk for text keys and text values only (the class, made once: diskcache loads on first use)."""
    import diskcache

    class TextDisk(diskcache.Disk):
        def put(self, key):
            if not isinstance(key, str):
                raise TypeError(f"a response cache key is text, not {type(key).__name__}")
            return super().put(key)

        def get(self, key, raw):
            if not raw:
                raise PickledEntry("a key stored as a pickle")
            return super().get(key, raw)

        def store(self, value, read, key=diskcache.core.UNKNOWN):
            if read or not isinstance(value, str):
                raise TypeError(f"a response cache value is text, not {type(value).__name__}")
            return super().store(value, read, key)

        def fetch(self, mode, filename, value, read):
            if mode == MODE_PICKLE:
                raise PickledEntry("a value stored as a pickle")
            return super().fetch(mode, filename, value, read)

    return TextDisk


def pickled_rows(database: Path) -> bool:
    """The cache database holds a row whose key or value diskcache stored as a pickle (read with SQLite alone)."""
    if not database.exists():
        return False
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=paths.CACHE_WAIT_S)
    try:
        row = connection.execute("SELECT EXISTS(SELECT 1 FROM Cache WHERE mode = ? OR raw = 0)", (MODE_PICKLE,))
        return bool(row.fetchone()[0])
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc).lower():
            return False
        raise
    finally:
        connection.close()


class ResponseCache:
    def __init__(self, folder: Path, size_limit: int):
        self.folder = Path(folder)
        self.size_limit = size_limit
        self._warned = False
        self.evictions = 0
        self._cache = None
        self._cache = self._open()

    def _new(self):
        import diskcache

        return diskcache.Cache(str(self.folder), size_limit=self.size_limit, timeout=paths.CACHE_WAIT_S,
                               disk=text_disk())

    def _open(self):
        try:
            if pickled_rows(self.folder / "cache.db"):  # before diskcache opens it: nothing of it is loaded
                raise PickledEntry("it holds entries stored as pickles, which are never loaded (a cache written by "
                                   "an older version of critique, or planted)")
            cache = self._new()
            cache.get("")  # reads the database: a truncated or garbled file fails here, not after paid calls
            return cache
        except sqlite3.DatabaseError as exc:
            return self._new() if self._mended(exc) else None
        except PickledEntry as exc:
            set_aside(self.folder, exc, WHAT)
            return self._new()

    def _mended(self, error: sqlite3.DatabaseError) -> bool:
        """Handle a failed open, read or write: a corrupt cache is set aside (True: rebuild it empty); any other
        trouble is said once and the cache left as it is (False)."""
        trouble = cache_trouble(error, self.folder / "cache.db")
        if trouble != "corrupt":
            if not self._warned:
                self._warned = True
                say_cache_skipped(WHAT, self.folder, trouble, error)
            return False
        if self._cache is not None:
            self._cache.close()
        set_aside(self.folder, error, WHAT)
        return True

    def _trouble(self, error: sqlite3.DatabaseError) -> bool:
        """A failed read or write: True when the cache was corrupt and is now rebuilt empty."""
        if not self._mended(error):
            return False
        self._cache = self._new()
        return True

    def get(self, key: str) -> dict | None:
        if self._cache is None:
            return None
        try:
            text = self._cache.get(key)
            value = json.loads(text) if text is not None else None
            if value is not None and not isinstance(value, dict):
                raise PickledEntry(f"an entry that is not a reply ({type(value).__name__})")
            return value
        except sqlite3.DatabaseError as exc:
            self._trouble(exc)
        except (PickledEntry, ValueError, TypeError) as exc:  # never loaded: the cache is set aside, once
            self._cache.close()
            set_aside(self.folder, exc, WHAT)
            self._cache = self._new()
        return None

    def set(self, key: str, value: dict) -> None:
        if self._cache is None:
            return
        try:
            self._set(key, value)
        except sqlite3.DatabaseError as exc:
            if self._trouble(exc):
                self._set(key, value)

    def _set(self, key: str, value: dict) -> None:
        """Store the reply, counting the entries the size limit evicted to make room (with other processes
        writing the same cache, the count is this process's view of it)."""
        before, new = len(self._cache), key not in self._cache
        self._cache.set(key, json.dumps(value, ensure_ascii=False, sort_keys=True))
        self.evictions += max(0, before + new - len(self._cache))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
