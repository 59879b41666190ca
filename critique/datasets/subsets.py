"""Nested seeded subsets of a train split (the train-size ablation), and the seeded order of a stream."""

from __future__ import annotations

import hashlib


def stream_order(items: list, seed: int) -> list:
    """The order in which a stream meets ``items`` (critique stream, and the field's online methods): by each one's
    seeded rank (seed, user, id), so a preference user's items keep one seeded order within the stream."""
    from critique.base.vocab import STREAM

    return sorted(items, key=lambda i: seeded_rank(seed, i.user, i.id, STREAM))


def seeded_rank(seed: int, user: str | None, item_id: str, salt: str | None = None) -> str:
    """An item's place in a seeded order (sort by it): a hash of (seed, salt, user, item id) that never
    depends on the other items or their order; another ``salt`` gives an order independent of this one."""
    salted = f"{seed}\0{salt}" if salt is not None else f"{seed}"
    return hashlib.sha256(f"{salted}\0{user or ''}\0{item_id}".encode()).hexdigest()


def subset_size(fraction: float, n: int) -> int:
    """round(fraction * n), at least one item of a non-empty pool; grows with the fraction."""
    return 0 if n == 0 else min(n, max(1, int(fraction * n + 0.5)))


def train_subset(items: list, fraction: float, seed: int) -> list:
    """The first ``fraction`` of each user's pool in a seeded order, in the original item order.

    The order depends only on (seed, user, item id), so the subset of a smaller fraction is
    always inside the subset of a larger one (nested), and fraction 1.0 is the whole list
    in its own order (its memory and summary are those of the plain run).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"a train fraction must be in (0, 1], not {fraction}")
    pools: dict[str | None, list] = {}
    for item in items:
        pools.setdefault(item.user, []).append(item)
    keep = set()
    for user, pool in pools.items():
        ordered = sorted(pool, key=lambda i: seeded_rank(seed, user, i.id))
        keep.update((user, i.id) for i in ordered[:subset_size(fraction, len(pool))])
    return [i for i in items if (i.user, i.id) in keep]
