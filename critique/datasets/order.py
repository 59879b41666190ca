"""The order of a split's items, which decides what ``--limit N`` keeps: its first N items.

A public set is often stored sorted by label (BANKING77's first 100 test rows hold 3 of its 77 intents), so its
first items are no sample of it. ``interleaved`` orders a split so that every prefix is one: within each user
(preference data keeps its users in their order), each label's items in a seeded shuffle, then one item of
each label in turn (labels in sorted order), so the first N items cover min(N, labels) labels and keep about the
split's label shares. An import asks for it with ``--order interleaved`` (a preset's ``order``); its card
records the order. ``narrowed`` says when a limited split holds far fewer labels than random items would, for
the run's warning.
"""

from __future__ import annotations

import random

ORDERS = ("source", "interleaved")  # the rows' order as the source gives them; interleaved by label (seeded)
MIN_ITEMS = 10  # a limit below this is a smoke test: its first items are not checked for their labels


def interleaved(items: list, seed: int) -> list:
    """``items`` in the interleaved order (see the module's doc), the same for the same items and seed."""
    groups: dict = {}
    for item in items:
        groups.setdefault(item.user, {}).setdefault(item.answer, []).append(item)
    out = []
    for user, by_label in groups.items():
        queues = []
        for label in sorted(by_label):
            mine = list(by_label[label])
            random.Random(f"{seed}:{user}:{label}").shuffle(mine)
            queues.append(mine)
        for turn in range(max(len(queue) for queue in queues)):
            out.extend(queue[turn] for queue in queues if turn < len(queue))
    return out


def ordered(items: list, order: str, seed: int) -> list:
    """``items`` in ``order`` (one of ORDERS)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    return interleaved(items, seed) if order == "interleaved" else list(items)


def labels_of(items: list) -> set:
    """The gold labels ``items`` hold."""
    return {item.answer for item in items}


def expected_labels(whole: list, n: int) -> float:
    """How many labels n items drawn at random from ``whole`` hold, on average (each label's share p: 1 - (1-p)^n)."""
    counts: dict = {}
    for item in whole:
        counts[item.answer] = counts.get(item.answer, 0) + 1
    return sum(1 - (1 - count / len(whole)) ** n for count in counts.values())


def narrowed(kept: list, whole: list) -> tuple[int, int] | None:
    """(labels ``kept`` holds, labels ``whole`` holds) when ``kept``, the first items of ``whole``, holds fewer
    than half the labels as many items drawn at random would (a split stored grouped by label); None otherwise,
    and for fewer than MIN_ITEMS items, where chance alone leaves labels out."""
    if len(kept) < MIN_ITEMS or not whole:
        return None
    have = len(labels_of(kept))
    return (have, len(labels_of(whole))) if have < expected_labels(whole, len(kept)) / 2 else None
