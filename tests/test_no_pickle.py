"""No code runs from a file the project reads: a pickle planted in the shared response cache, the embedding
cache or any file of a run directory is never loaded (a pickle's payload here writes a marker file when it is
unpickled; the marker must never appear)."""

import json
import pickle
import sqlite3

import diskcache
import pytest

from critique.base import rundir
from critique.cli import main
from critique.llm.response_cache import ResponseCache


class Payload:
    """Unpickled, it writes the file ``path``: the code a planted pickle would run."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (_write_marker, (self.path,))


def _write_marker(path):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("ran")
    return {"text": "{}"}


def run(home, out="run", *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "3", "--k", "2",
                 "--strategies", "zero_shot,EP_CRIT", "--out", str(home / out), "--quiet", *extra])


def _plant_in_response_cache(folder, marker, keys):
    """Pickled values (diskcache's default Disk) under ``keys`` and the key "" that an open reads."""
    with diskcache.Cache(str(folder)) as planted:
        for key in ["", *keys]:
            planted.set(key, Payload(marker))


def test_a_pickle_planted_in_the_response_cache_is_never_loaded(home, fake_llm, capsys):
    assert run(home, "first") == 0
    keys = [c["request_hash"] for c in rundir.read_jsonl(home / "first" / rundir.CALLS)]
    marker = home / "ran"
    _plant_in_response_cache(home / "cache" / "responses", marker, keys)
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert run(home, "second") == 0  # the same requests: each would be read from the cache
    err = capsys.readouterr().err
    assert not marker.exists()
    assert err.count("response cache") == 1 and "stored as pickles, which are never loaded" in err, err
    assert len(fake_llm.CALLS) == len(keys)  # nothing answered from the planted entries
    assert list(home.glob("cache/responses.corrupt-*"))  # set aside, kept for the user to look at


def test_a_pickled_row_that_appears_later_is_refused_when_read(home, fake_llm, tmp_path):
    cache = ResponseCache(tmp_path / "responses", 2**30)
    cache.set("k", {"text": "x"})
    assert cache.get("k") == {"text": "x"}
    marker = tmp_path / "ran"
    with diskcache.Cache(str(tmp_path / "responses")) as planted:  # another process writes a pickle meanwhile
        planted.set("k", Payload(marker))
    assert cache.get("k") is None and not marker.exists()
    cache.close()


def test_values_are_stored_as_text(tmp_path):
    cache = ResponseCache(tmp_path / "responses", 2**30)
    cache.set("key", {"text": "a reply", "prompt_tokens": 3})
    cache.close()
    rows = sqlite3.connect(tmp_path / "responses" / "cache.db").execute("SELECT key, raw, mode, value FROM Cache")
    (key, raw, mode, value), = rows.fetchall()
    assert (key, raw) == ("key", 1) and mode != 4 and json.loads(value) == {"text": "a reply", "prompt_tokens": 3}


def _pickled(marker) -> bytes:
    return pickle.dumps(Payload(marker))


@pytest.mark.parametrize("name", [rundir.CALLS, rundir.PREDICTIONS, rundir.MANIFEST, "memory/episodic.jsonl",
                                  "memory/semantic.json"])
def test_a_pickle_planted_in_a_run_directory_file_is_never_loaded(home, fake_llm, capsys, name):
    assert run(home) == 0
    marker = home / "ran"
    path = home / "run" / name
    with open(path, "ab") as handle:
        handle.write(_pickled(marker))
    for argv in (["tables", str(home / "run")], ["audit", str(home / "run")]):
        main(argv)
    run(home)
    assert not marker.exists()


def test_a_pickle_planted_in_the_embedding_cache_is_never_loaded(home, fake_llm, capsys):
    assert run(home) == 0
    marker = home / "ran"
    database = home / "cache" / "embeddings.sqlite"
    db = sqlite3.connect(database)
    db.execute("UPDATE vec SET v = ?", (_pickled(marker),))
    db.commit()
    db.close()
    run(home, "again", "--seed", "1")
    assert not marker.exists()


def test_malformed_vectors_in_the_embedding_cache_are_computed_again(home, fake_llm, capsys):
    import numpy as np

    from critique.engine.memory.embed import Encoder

    encoder = Encoder(cache_dir=home / "cache")
    texts = ["a brass kettle", "a copper lantern", "an oak chair"]
    right = encoder.encode(texts)
    db = sqlite3.connect(home / "cache" / "embeddings.sqlite")
    rows = db.execute("SELECT text_hash FROM vec ORDER BY text_hash").fetchall()
    db.execute("UPDATE vec SET v = ? WHERE text_hash = ?", (np.zeros(384, np.float32).tobytes(), rows[0][0]))
    db.execute("UPDATE vec SET v = ? WHERE text_hash = ?", (b"\x01\x02\x03", rows[1][0]))
    db.commit()
    db.close()
    capsys.readouterr()
    again = Encoder(cache_dir=home / "cache").encode(texts)
    assert np.allclose(again, right, atol=1e-5)
    assert capsys.readouterr().err.count("holds malformed vectors") == 1
