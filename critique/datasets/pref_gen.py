"""pref-gen: synthetic users with hidden preference rules over a generated film catalog.

The catalog's films have a genre, a year, a length, a mood and a popularity, all drawn
from the tables below with a seeded generator. Each user has a hidden rule of stated
complexity: 1-4 attribute tests ranked by importance (a film passing a more important
test always wins, like a lexicographic order), and a stated label-noise rate: exactly
round(rate x 50) of the user's 50 answers are flipped, split evenly between train and
test. Questions use the preference datasets' format and splits: a film the rule prefers
against one of similar popularity it ranks lower, shown as A/B in balanced random order,
25 train / 25 test per user.

The rule is stored with the user in the dataset card (``extra.users``), never in the
question, so analysis can check whether semantic memory recovered it. A model cannot
know these answers in advance. Same seed: byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from critique.datasets.preference import ANSWER_SPACE, Neighbours, question, task_text
from critique.datasets.rawfiles import balanced_positions, check_balanced
from critique.datasets.splits import DatasetCard, DatasetError, Item, write_dataset

NAME = "pref-gen"
N_ITEMS = 600
PER_USER = 50
WINDOW = 10
GENRES = ["drama", "comedy", "thriller", "science fiction", "romance", "documentary", "horror", "animation"]
MOODS = ["light", "dark", "tense", "uplifting"]
ADJECTIVES = ["Quiet", "Crimson", "Last", "Hidden", "Silver", "Broken", "Distant", "Electric", "Golden", "Lonely",
              "Midnight", "Paper", "Restless", "Salt", "Second", "Wild", "Winter", "Velvet", "Northern", "Burning"]
NOUNS = ["Orchard", "Harbor", "Signal", "Garden", "Frontier", "Mirror", "Engine", "Season", "Lantern", "River",
         "Station", "Kingdom", "Letter", "Circus", "Island", "Archive", "Bridge", "Summer", "Machine", "Valley"]
# (complexity, noise rate) of each user: every complexity with every noise level, plus one harder user.
USERS = [(1, 0.0), (1, 0.1), (1, 0.2), (2, 0.0), (2, 0.1), (2, 0.2), (3, 0.0), (3, 0.1), (3, 0.2), (4, 0.1)]


@dataclass(frozen=True)
class Film:
    id: str
    title: str
    genre: str
    year: int
    minutes: int
    mood: str
    popularity: int

    def describe(self) -> str:
        return f"{self.title} ({self.year}; {self.genre}; {self.minutes} min; mood: {self.mood})"


@dataclass(frozen=True)
class Test:
    attribute: str  # genre, year, minutes, mood
    values: tuple = ()  # genre / mood: the liked values
    threshold: int = 0  # year / minutes
    above: bool = True

    def passes(self, film: Film) -> bool:
        if self.attribute in ("genre", "mood"):
            return getattr(film, self.attribute) in self.values
        value = getattr(film, self.attribute)
        return value > self.threshold if self.above else value < self.threshold

    def text(self) -> str:
        if self.attribute == "genre":
            return "genre is " + " or ".join(self.values)
        if self.attribute == "mood":
            return "mood is " + " or ".join(self.values)
        if self.attribute == "year":
            return f"released {'after' if self.above else 'before'} {self.threshold}"
        return f"{'longer' if self.above else 'shorter'} than {self.threshold} minutes"


@dataclass(frozen=True)
class Rule:
    tests: tuple[Test, ...]  # most important first

    def score(self, film: Film) -> int:
        return sum(2 ** (len(self.tests) - 1 - k) for k, t in enumerate(self.tests) if t.passes(film))

    def text(self) -> str:
        return "Prefers, most important first: " + "; ".join(
            f"({k}) {t.text()}" for k, t in enumerate(self.tests, start=1)) + "."


def catalog(rng: random.Random) -> list[Film]:
    titles = [f"The {a} {n}" for a in ADJECTIVES for n in NOUNS]
    titles += [f"{n} of the {m}" for n in NOUNS for m in NOUNS if n != m]
    rng.shuffle(titles)
    return [Film(f"f{k:03d}", titles[k], rng.choice(GENRES), rng.randint(1960, 2024), rng.randint(75, 190),
                 rng.choice(MOODS), int(10 ** rng.uniform(1, 4))) for k in range(N_ITEMS)]


def make_test(rng: random.Random, attribute: str) -> Test:
    if attribute == "genre":
        return Test("genre", tuple(sorted(rng.sample(GENRES, rng.choice([2, 3])))))
    if attribute == "mood":
        return Test("mood", (rng.choice(MOODS),))
    if attribute == "year":
        return Test("year", threshold=rng.randrange(1975, 2011, 5), above=rng.random() < 0.5)
    return Test("minutes", threshold=rng.randrange(95, 155, 5), above=rng.random() < 0.5)


def make_rule(rng: random.Random, complexity: int) -> Rule:
    attributes = rng.sample(["genre", "year", "minutes", "mood"], complexity)
    return Rule(tuple(make_test(rng, a) for a in attributes))


def user_pairs(rng: random.Random, rule: Rule, films: list[Film], user: str) -> list[tuple[Film, Film]]:
    """``PER_USER`` (preferred, other) pairs of similar popularity; every film used once."""
    by_id = {f.id: f for f in films}
    near = Neighbours(Counter({f.id: f.popularity for f in films}))
    used: set[str] = set()
    pairs = []
    for film in rng.sample(films, len(films)):
        if film.id in used:
            continue
        lower = lambda i: i not in used and i != film.id and rule.score(by_id[i]) < rule.score(film)  # noqa: E731
        options = near.closest(film.popularity, lower, WINDOW)
        if options:
            other = by_id[rng.choice(options)]
            used |= {film.id, other.id}
            pairs.append((film, other))
        if len(pairs) == PER_USER:
            return pairs
    raise DatasetError(f"{NAME}: user {user}'s rule separates too few films for {PER_USER} pairs")


def split_items(rng: random.Random, user: str, offset: int, pairs, rule: Rule, flips: int) -> list[Item]:
    """Items of one split; exactly ``flips`` answers flipped, keeping A/B balanced."""
    positions = balanced_positions(rng, len(pairs), 2, offset=offset)
    by_answer = [[k for k, p in enumerate(positions) if p == side] for side in (0, 1)]
    from_a = (flips + 1) // 2 if len(by_answer[0]) >= len(by_answer[1]) else flips // 2
    flipped = set(rng.sample(by_answer[0], from_a) + rng.sample(by_answer[1], flips - from_a))
    items = []
    for k, ((liked, other), position) in enumerate(zip(pairs, positions)):
        a, b = (liked, other) if position == 0 else (other, liked)
        answer = 1 - position if k in flipped else position
        meta = {"item_a": a.id, "item_b": b.id, "rule_prefers": ANSWER_SPACE[position], "flipped": k in flipped,
                "scores": {"a": rule.score(a), "b": rule.score(b)}, "popularity": [a.popularity, b.popularity]}
        items.append(Item(f"{user}-{liked.id}", question(user, a.describe(), b.describe()),
                          ANSWER_SPACE[answer], user, meta))
    return items


def build(out: Path, seed: int = 0, raw: Path | None = None):
    """Generate pref-gen into ``out``; ``raw`` is unused (the data is generated)."""
    rng = random.Random(f"{NAME}:{seed}")
    films = catalog(rng)
    train, test, users = [], [], {}
    for index, (complexity, noise) in enumerate(USERS):
        user = f"g{index + 1:02d}"
        rule = make_rule(rng, complexity)
        pairs = user_pairs(rng, rule, films, user)
        half, flips = PER_USER // 2, round(noise * PER_USER)
        train_flips = (flips + index % 2) // 2  # an odd count alternates its extra flip between splits
        user_train = split_items(rng, user, index, pairs[:half], rule, train_flips)
        user_test = split_items(rng, user, index + 1, pairs[half:], rule, flips - train_flips)
        for split, part in (("train", user_train), ("test", user_test)):
            check_balanced(part, ANSWER_SPACE, f"{out}/{user}/{split}.jsonl")
        train += user_train
        test += user_test
        users[user] = {"complexity": complexity, "noise": noise, "rule": rule.text(),
                       "tests": [asdict(t) for t in rule.tests],
                       "flipped": {"train": sum(i.meta["flipped"] for i in user_train),
                                   "test": sum(i.meta["flipped"] for i in user_test)}}
    card = DatasetCard(
        name=NAME, task=task_text("films"), answer_space=ANSWER_SPACE, kind="preference",
        source="generated by critique.datasets.pref_gen", license="Apache-2.0 (generated by this project)",
        version="1", seed=seed, build_command=f"critique datasets build {NAME} --seed {seed}",
        description=f"{len(USERS)} synthetic users over a generated catalog of {N_ITEMS} films; each user has a "
                    "hidden lexicographic preference rule (complexity = number of attribute tests) and a stated "
                    "label-noise rate. The rules are in extra.users and are never shown to the model.",
        extra={"users": users, "catalog_size": N_ITEMS, "popularity_window": WINDOW},
    )
    return write_dataset(out, card, train, test)
