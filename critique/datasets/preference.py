"""steam, book, anime, movie: "is user U more likely to prefer A or B?".

For each dataset, ``N_USERS`` users with at least ``MIN_POSITIVES`` liked items are drawn
(seeded). For each user, ``PER_USER`` liked items are each paired with an item the user
never touched whose popularity (number of users who touched it) is among the ``WINDOW``
closest to the liked item's; every item appears at most once per user. The liked item is
shown as A or B at random, balanced per user and split; the first half of the user's
pairs is train, the second test. The reader for each upstream format is in pref_readers.py.
"""

from __future__ import annotations

import bisect
import random
from collections import Counter
from pathlib import Path

from critique.datasets import pref_readers
from critique.datasets.pref_readers import Interactions
from critique.datasets.rawfiles import balanced_positions, check_balanced, raw_checksums, raw_folder
from critique.datasets.splits import Dataset, DatasetCard, DatasetError, Item, write_dataset

ANSWER_SPACE = ["A", "B"]
N_USERS = 10
MIN_POSITIVES = 50
PER_USER = 50
WINDOW = 10

NOUNS = {"steam": "video games", "book": "books", "anime": "anime titles", "movie": "movies"}
SOURCES = {
    "steam": ("Kaggle tamber/steam-video-games (steam-200k.csv), lossless caserec re-encoding from "
              "github.com/caserec/Datasets-for-Recommender-Systems @ 4180b4dc4103 (Processed Datasets/Steam)",
              "Kaggle dataset terms (not checked offline); generated from public Steam data"),
    "book": ("Book-Crossing (Ziegler et al., WWW 2005), caserec filtered subset from "
             "github.com/caserec/Datasets-for-Recommender-Systems @ 4180b4dc4103 (Processed Datasets/BookCrossing); "
             "Book-Crossing stands in for Goodreads, whose data was not available",
             "free for research use when acknowledged (cite Ziegler et al., WWW 2005)"),
    "anime": ("Kaggle CooperUnion anime-recommendations-database (MyAnimeList), caserec 5,000-user subsample from "
              "github.com/caserec/Datasets-for-Recommender-Systems @ 4180b4dc4103 (Processed Datasets/Anime)",
              "Kaggle dataset terms (commonly cited as CC0; not checked offline)"),
    "movie": ("MovieLens (GroupLens); ml-latest-small from github.com/vnelima/Phase-4-Project @ fe1425f79ecb, "
              "or ml-100k from github.com/Karan-Malik/RestrictedBoltzmannMachine @ 2d918d569643",
              "GroupLens terms: research use, acknowledge, no commercial use (ml-100k: no redistribution)"),
}


def task_text(noun: str) -> str:
    return (f"Each question names a user and two {noun}, A and B. Judging from what you know about "
            f"this user's taste, answer A or B: which of the two is the user more likely to prefer?")


def question(user: str, a: str, b: str) -> str:
    return f"Is user {user} more likely to prefer A or B?\nA: {a}\nB: {b}"


def popularity(inter: Interactions) -> Counter:
    return Counter(item for items in inter.history.values() for item in items)


class Neighbours:
    """Items sorted by popularity, to find the ones closest to a given popularity.
    Items of equal popularity are in a seeded random order (else low ids would win)."""

    def __init__(self, pop: Counter, rng: random.Random | None = None):
        tiebreak = {i: rng.random() for i in sorted(pop)} if rng else {i: 0.0 for i in pop}
        self.ranked = sorted(pop, key=lambda i: (pop[i], tiebreak[i], i))
        self.values = [pop[i] for i in self.ranked]

    def closest(self, value: int, allowed, n: int) -> list[str]:
        """The ``n`` allowed items whose popularity is closest to ``value``."""
        right = bisect.bisect_left(self.values, value)
        left, out = right - 1, []
        while len(out) < n and (left >= 0 or right < len(self.ranked)):
            take_left = right >= len(self.ranked) or (
                left >= 0 and value - self.values[left] <= self.values[right] - value)
            index = left if take_left else right
            if take_left:
                left -= 1
            else:
                right += 1
            if allowed(self.ranked[index]):
                out.append(self.ranked[index])
        return out


def eligible_users(inter: Interactions) -> list[str]:
    users = [u for u, liked in inter.positives.items() if len(liked) >= MIN_POSITIVES]
    return sorted(users, key=lambda u: (len(u), u))


def user_pairs(rng: random.Random, user: str, inter: Interactions, pop: Counter,
               near: Neighbours, where: str) -> list[tuple[str, str]]:
    """``PER_USER`` (liked, unseen) pairs of similar popularity, all items distinct."""
    liked = sorted(inter.positives[user], key=lambda i: (len(i), i))
    if len(liked) < PER_USER:
        raise DatasetError(f"{where}: user {user} has {len(liked)} liked items, {PER_USER} needed")
    used: set[str] = set()
    pairs = []
    for item in rng.sample(liked, PER_USER):
        options = near.closest(pop[item], lambda i: i not in inter.history[user] and i not in used, WINDOW)
        if not options:
            raise DatasetError(f"{where}: no unseen item left to pair with item {item!r} of user {user}")
        other = rng.choice(options)
        used.add(other)
        pairs.append((item, other))
    return pairs


def user_items(rng: random.Random, user: str, index: int, pairs, inter: Interactions, pop: Counter):
    """Train and test Items of one user; answer positions balanced within each split."""
    label = f"u{user}"
    half = len(pairs) // 2
    splits = []
    for number, part in enumerate((pairs[:half], pairs[half:])):
        positions = balanced_positions(rng, len(part), 2, offset=index + number)
        items = []
        for (liked, other), position in zip(part, positions):
            a, b = (liked, other) if position == 0 else (other, liked)
            meta = {"liked": liked, "unseen": other, "item_a": a, "item_b": b,
                    "popularity": {"liked": pop[liked], "unseen": pop[other]}}
            items.append(Item(f"{label}-{liked}", question(label, inter.items[a], inter.items[b]),
                              ANSWER_SPACE[position], label, meta))
        splits.append(items)
    return splits


def build_from(out: Path, name: str, inter: Interactions, folder: Path, seed: int) -> Dataset:
    rng = random.Random(f"{name}:{seed}")
    users = eligible_users(inter)
    where = str(inter.users_file or folder)
    if len(users) < N_USERS:
        raise DatasetError(f"{where}: only {len(users)} users have at least {MIN_POSITIVES} liked items "
                           f"({inter.positive_rule}); {N_USERS} needed")
    chosen = sorted(rng.sample(users, N_USERS), key=lambda u: (len(u), u))
    pop, train, test, stats = popularity(inter), [], [], {}
    near = Neighbours(pop, rng)
    for index, user in enumerate(chosen):
        pairs = user_pairs(rng, user, inter, pop, near, where)
        rng.shuffle(pairs)
        user_train, user_test = user_items(rng, user, index, pairs, inter, pop)
        for split, part in (("train", user_train), ("test", user_test)):
            check_balanced(part, ANSWER_SPACE, f"{out}/u{user}/{split}.jsonl")
        train += user_train
        test += user_test
        stats[f"u{user}"] = {"liked": len(inter.positives[user]), "history": len(inter.history[user])}
    source, license_ = SOURCES[name]
    card = DatasetCard(
        name=name, task=task_text(NOUNS[name]), answer_space=ANSWER_SPACE, kind="preference",
        source=source, license=license_, version=f"{inter.version}; builder 1", seed=seed,
        build_command=f"critique datasets build {name} --raw DIR --seed {seed}",
        description=f"{N_USERS} users with at least {MIN_POSITIVES} liked items; {PER_USER} liked items per user, "
                    f"each against an unseen item of similar popularity; {PER_USER // 2} train / "
                    f"{PER_USER - PER_USER // 2} test per user.",
        extra={"positive_rule": inter.positive_rule, "popularity_window": WINDOW, "users": stats,
               "raw_sha256": raw_checksums(folder, inter.files)},
    )
    return write_dataset(out, card, train, test)


def builder(name: str):
    """``build(out, seed=0, raw=None)`` for one of the four preference datasets."""

    def build(out: Path, seed: int = 0, raw: Path | None = None):
        folder = raw_folder(raw, name)
        return build_from(Path(out), name, pref_readers.READERS[name](folder), folder, seed)

    build.__doc__ = f"Build {name} from its raw folder into ``out``."
    return build


steam, book, anime, movie = (builder(n) for n in ("steam", "book", "anime", "movie"))
