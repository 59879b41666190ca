"""Episodic memory: one entry per critiqued train item, retrieved by question similarity.

Entries are plain dicts carrying their provenance (item id, question, initial answer,
gold label, critique, assertion flag, model, template hash, run id, request hash). One
FAISS inner-product index over L2-normalised question embeddings per pool: ``all``, or
one user for preference data, so retrieval never crosses users.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from critique.base import rundir
from critique.base.ids import SHARED_POOL as ALL, pool_of  # noqa: F401  (one definition; the engine's names)
from critique.base.rundir import read_jsonl

ENTRIES = rundir.EPISODIC


def entry_id(item) -> str:
    """The id of a train item's entry: USER/ITEM_ID for preference data, ITEM_ID otherwise."""
    from critique.base.ids import entry_id as of

    return of(item.user, item.id)


class Retrieved(list):
    """Retrieved entries, nearest first (a list of entry dicts, as before), with ``scores``: the
    similarity of each to the question, in the same order (FAISS's inner product of L2-normalised
    embeddings: their cosine), or None where nothing was retrieved by similarity (many_shot's examples), and
    ``injected_tokens``: the tokens their examples add to the prompt they were put in (set by the pipeline;
    0 until then; None: not counted)."""

    def __init__(self, entries=(), scores=()):
        super().__init__(entries)
        self.scores = None if scores is None else [float(s) for s in scores]
        if self.scores is not None and len(self.scores) != len(self):
            raise ValueError(f"{len(self)} entries with {len(self.scores)} scores")
        self.injected_tokens = 0

    def keep(self, rows: list[int]) -> "Retrieved":
        """The entries at positions ``rows`` (in that order), with their scores."""
        return Retrieved([self[n] for n in rows], None if self.scores is None else [self.scores[n] for n in rows])


def _index_path(folder: Path, pool: str) -> Path:
    return folder / f"episodic-{pool}.faiss"


def pool_rows(entries: list[dict]) -> dict[str, list[int]]:
    """Pool -> the rows of its entries, in order."""
    pools: dict[str, list[int]] = {}
    for row, entry in enumerate(entries):
        pools.setdefault(pool_of(entry.get("user")), []).append(row)
    return pools


class EpisodicMemory:
    def __init__(self, entries: list[dict], vectors: np.ndarray):
        import faiss

        self.entries = entries
        self._pools: dict[str, tuple[list[int], object]] = {}
        for pool, rows in sorted(pool_rows(entries).items()):  # one pass: linear in the entries
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(np.ascontiguousarray(vectors[rows], dtype=np.float32))
            self._pools[pool] = (rows, index)

    @classmethod
    def build(cls, entries: list[dict], encoder) -> "EpisodicMemory":
        return cls(entries, encoder.encode([e["question"] for e in entries]))

    def save(self, folder: Path) -> None:
        import faiss

        rundir.write_jsonl_atomic(folder / ENTRIES, self.entries)
        for pool, (_, index) in self._pools.items():
            faiss.write_index(index, str(_index_path(folder, pool)))

    @classmethod
    def load(cls, folder: Path, encoder) -> "EpisodicMemory":
        """What `save` wrote to `folder`: the entries with the vectors of their FAISS indexes; the
        questions are encoded again (with `encoder`, a callable that returns one) when an index is
        missing or does not match its pool's entries."""
        import faiss

        entries = read_jsonl(folder / ENTRIES)
        vectors = None
        for pool, rows in pool_rows(entries).items():
            path = _index_path(folder, pool)
            index = faiss.read_index(str(path)) if path.exists() else None
            if index is None or index.ntotal != len(rows):
                return cls.build(entries, encoder())
            found = index.reconstruct_n(0, index.ntotal)
            if vectors is None:
                vectors = np.zeros((len(entries), found.shape[1]), dtype=np.float32)
            vectors[rows] = found
        return cls(entries, vectors if vectors is not None else np.zeros((0, 1), np.float32))

    def pruned(self, removed: set[str]) -> "EpisodicMemory":
        """This memory without the entries whose ids are in ``removed`` (each other entry with its vector)."""
        keep = [n for n, e in enumerate(self.entries) if e["id"] not in removed]
        return EpisodicMemory([self.entries[n] for n in keep], self.vectors()[keep])

    def vectors(self) -> np.ndarray:
        """The entries' question vectors, one row per entry in order, as their pools' FAISS indexes hold
        them (no row for an empty memory)."""
        found = [(rows, index.reconstruct_n(0, index.ntotal)) for rows, index in self._pools.values()]
        vectors = np.zeros((len(self.entries), found[0][1].shape[1] if found else 0), dtype=np.float32)
        for rows, part in found:
            vectors[rows] = part
        return vectors

    def size(self, user: str | None) -> int:
        """Entries in the user's pool."""
        found = self._pools.get(pool_of(user))
        return len(found[0]) if found else 0

    def retrieve(self, vector: np.ndarray, user: str | None, k: int, exclude_item: str | None = None) -> Retrieved:
        """The K nearest entries of the user's pool, nearest first, never ``exclude_item``, with
        their similarity scores (``Retrieved.scores``)."""
        if pool_of(user) not in self._pools or k <= 0:
            return Retrieved()
        rows, index = self._pools[pool_of(user)]
        scores, found = index.search(np.asarray(vector, dtype=np.float32).reshape(1, -1), min(k + 1, len(rows)))
        hits = [(self.entries[rows[j]], float(score)) for j, score in zip(found[0], scores[0]) if j >= 0]
        hits = [(e, score) for e, score in hits if e["item_id"] != exclude_item][:k]
        return Retrieved([e for e, _ in hits], [score for _, score in hits])
