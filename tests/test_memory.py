import numpy as np

from critique.engine.memory.embed import Encoder
from critique.engine.memory.episodic import EpisodicMemory


def entry(item_id, user=None):
    return {"id": item_id, "item_id": item_id, "user": user, "question": f"q {item_id}"}


def unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_retrieval_returns_k_nearest_first_and_never_the_item_itself():
    entries = [entry(f"e{i}") for i in range(5)]
    angles = [0.0, 0.1, 0.4, 0.9, 1.4]
    vectors = np.stack([unit(np.cos(a), np.sin(a)) for a in angles])
    memory = EpisodicMemory(entries, vectors)
    query = unit(1.0, 0.0)
    assert [e["id"] for e in memory.retrieve(query, None, 3)] == ["e0", "e1", "e2"]
    assert [e["id"] for e in memory.retrieve(query, None, 3, exclude_item="e0")] == ["e1", "e2", "e3"]
    assert len(memory.retrieve(query, None, 10)) == 5


def test_retrieval_stays_within_the_users_pool():
    entries = [entry("a1", "u1"), entry("a2", "u1"), entry("b1", "u2")]
    vectors = np.stack([unit(1, 0), unit(0, 1), unit(1, 0.01)])
    memory = EpisodicMemory(entries, vectors)
    assert [e["id"] for e in memory.retrieve(unit(1, 0), "u1", 5)] == ["a1", "a2"]
    assert [e["id"] for e in memory.retrieve(unit(1, 0), "u2", 5)] == ["b1"]
    assert memory.retrieve(unit(1, 0), "nobody", 5) == []


def test_memory_persists(tmp_path):
    memory = EpisodicMemory([entry("a"), entry("b")], np.stack([unit(1, 0), unit(0, 1)]))
    memory.save(tmp_path)
    assert (tmp_path / "episodic.jsonl").read_text().count("\n") == 2
    assert (tmp_path / "episodic-all.faiss").exists()


def test_real_encoder_embeds_each_text_once(tmp_path):
    encoder = Encoder(cache_dir=tmp_path)
    vectors = encoder.encode(["cats purr", "kittens meow", "stock markets fell"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    fresh = Encoder(cache_dir=tmp_path)  # a new process would load no model: every text is cached
    again = fresh.encode(["stock markets fell", "cats purr"])
    assert fresh._model is None and np.allclose(again, vectors[[2, 0]])


def test_vectors_are_the_entries_rows_across_pools_and_survive_a_reload(tmp_path):
    entries = [entry("a1", "u1"), entry("b1", "u2"), entry("a2", "u1")]
    vectors = np.stack([unit(1, 0), unit(0, 1), unit(1, 1)])
    memory = EpisodicMemory(entries, vectors)
    assert np.array_equal(memory.vectors(), vectors)
    memory.save(tmp_path)
    loaded = EpisodicMemory.load(tmp_path, lambda: None)  # every index matches: nothing is encoded
    assert [e["id"] for e in loaded.entries] == ["a1", "b1", "a2"] and np.array_equal(loaded.vectors(), vectors)
    assert EpisodicMemory([], np.zeros((0, 2), np.float32)).vectors().shape == (0, 0)
