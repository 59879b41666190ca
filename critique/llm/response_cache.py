"""The shared response cache (diskcache, SQLite in WAL mode), as the LLM client uses it: a call's reply
by its request hash. It only saves calls, so no trouble with it stops a run:

- busy (another process holds the lock past the wait, critique.base.paths.CACHE_WAIT_S), unwritable (a
  read-only cache) or failing for a moment: the call goes on without the cache, said once in a warning line,
  and the cache is left as it is;
- corrupt (the file fails SQLite's integrity check, or is no database): it is set aside
  (``<folder>.corrupt-<time>``) and rebuilt empty, said in one line.

Its size is bounded (``size_limit`` bytes: --cache-size-gb, 8 by default; diskcache's least-recently-stored
eviction): ``evictions`` counts the entries this process's writes evicted, and the client says so when it closes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from critique.base import paths
from critique.base.paths import cache_trouble, say_cache_skipped, set_aside

WHAT = "response cache"


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

        return diskcache.Cache(str(self.folder), size_limit=self.size_limit, timeout=paths.CACHE_WAIT_S)

    def _open(self):
        try:
            cache = self._new()
            cache.get("")  # reads the database: a truncated or garbled file fails here, not after paid calls
            return cache
        except sqlite3.DatabaseError as exc:
            return self._new() if self._mended(exc) else None

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
            return self._cache.get(key)
        except sqlite3.DatabaseError as exc:
            self._trouble(exc)
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
        self._cache.set(key, value)
        self.evictions += max(0, before + new - len(self._cache))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
