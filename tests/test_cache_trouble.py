"""A cache in trouble never stops a run and is set aside only when it is corrupt: a cache another process holds
locked past the wait is busy (the run goes on without it, says so, and leaves it as it is), a read-only one is
unwritable, a cache on a network file system is refused; the size limit's evictions are counted, and the
embeddings of a long encoding are kept a chunk at a time."""

import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from critique.base import paths
from critique.cli import main

HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # holds the lock until the test closes its input
"""


def run(home, out="run", *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "3", "--k", "2",
                 "--strategies", "zero_shot", "--out", str(home / out), "--quiet", *extra])


def held(database):
    """A second process holding ``database``'s write lock, once it says it holds it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(database)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_busy_response_cache_is_waited_for_then_gone_without_and_never_set_aside(home, fake_llm, monkeypatch,
                                                                                  capsys):
    assert run(home, "warm") == 0  # the cache exists, with its tables
    monkeypatch.setattr(paths, "CACHE_WAIT_S", 0.2)
    holder = held(home / "cache" / "responses" / "cache.db")
    try:
        assert run(home, "busy", "--seed", "1") == 0  # new requests: each would be written to the cache
    finally:
        holder.stdin.close()
        holder.wait()
    err = capsys.readouterr().err
    assert "is held by another process past the wait" in err and "going on without it" in err, err
    assert len([line for line in err.splitlines() if "going on without it" in line]) == 1  # said once
    assert not list((home / "cache").glob("*.corrupt-*"))  # the shared cache is left where it is
    assert json.loads((home / "busy" / "manifest.json").read_text())["status"] == "complete"


def test_a_busy_embedding_cache_is_gone_without(home, fake_llm, monkeypatch, capsys):
    assert run(home, "warm") == 0
    monkeypatch.setattr(paths, "CACHE_WAIT_S", 0.2)
    holder = held(home / "cache" / "embeddings.sqlite")
    try:
        assert run(home, "busy", "--seed", "1") == 0
    finally:
        holder.stdin.close()
        holder.wait()
    err = capsys.readouterr().err
    assert "the embedding cache" in err and "held by another process" in err, err
    assert not list((home / "cache").glob("*.corrupt-*"))


def test_what_a_cache_error_means(tmp_path):
    database = tmp_path / "c.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (x)")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as readonly:
        with pytest.raises(sqlite3.OperationalError) as refused:
            readonly.execute("INSERT INTO t VALUES (1)")
    assert paths.cache_trouble(refused.value, database) == "unwritable"
    assert paths.cache_trouble(sqlite3.OperationalError("database is locked"), database) == "busy"
    garbled = tmp_path / "g.db"
    garbled.write_bytes(b"this is not a database" * 100)
    assert paths.cache_trouble(sqlite3.DatabaseError("file is not a database"), garbled) == "corrupt"
    assert paths.cache_trouble(sqlite3.DatabaseError("disk I/O error"), database) == "transient"  # passes the check


def test_a_cache_on_a_network_file_system_is_refused_in_one_line(home, fake_llm, monkeypatch, capsys):
    mounts = home / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nserver:/export {home / 'cache'} nfs4 rw 0 0\n")
    monkeypatch.setattr(paths, "MOUNTS", str(mounts))
    assert paths.network_filesystem(home / "cache" / "responses") == "nfs4"
    assert paths.network_filesystem(home / "elsewhere") is None
    assert run(home) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is on a network file system (nfs4)" in err and "--no-cache" in err
    assert not (home / "run").exists()
    assert run(home, "run", "--no-cache") == 0  # without the cache it may run there


def test_the_size_limit_counts_its_evictions(tmp_path):
    from critique.llm.response_cache import ResponseCache

    cache = ResponseCache(tmp_path / "responses", size_limit=1)
    for n in range(40):
        cache.set(f"key-{n}", {"text": "x" * 2000})
    assert cache.evictions > 0 and cache.evictions == 40 - len(cache._cache)
    cache.close()


def test_an_encoding_keeps_its_vectors_a_chunk_at_a_time(tmp_path, monkeypatch):
    from critique.engine.memory import embed

    class Model:
        calls = 0

        def encode(self, texts, **_):
            Model.calls += 1
            if Model.calls == 3:
                raise KeyboardInterrupt  # killed while encoding the third chunk
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    monkeypatch.setattr(embed, "CHUNK", 2)
    encoder = embed.Encoder("toy", tmp_path)
    encoder._model = Model()
    with pytest.raises(KeyboardInterrupt):
        encoder.encode([f"text {n}" for n in range(6)])
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM vec").fetchone()[0] == 4  # two chunks kept
