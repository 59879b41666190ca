"""control-pos and control-neg: two generated datasets that check whether the harness can see an
effect of memory at all, and whether it refrains from inventing one.

Both datasets share one seeded registry of 250 invented objects. Each object has a made-up code
name (e.g. "Velmora") and a description drawn from the tables below: a material, a kind of
object, a distinguishing feature, the kind of place and the town where it was found, and a year.
Every object is asked about twice:

- in train, in one of three catalogue wordings;
- in test, as a light paraphrase of that train question (one of three other wordings, the same
  code name and the same description): the train question is its *twin* (``meta.twin``).

The task is to say which of four vaults (1-4) holds the object. The vault is assigned with a
seeded shuffle, balanced over 1-4 and drawn independently of the description, so no rule and no
knowledge can recover it from the question:

- **control-pos** (positive control): a test item's vault is its twin's. A model that answers
  from a retrieved train example (its question and gold label) can be right every time; without
  memory it is at chance (25%). EP_LABEL and the critique strategies should beat zero_shot and
  the majority baseline here.
- **control-neg** (negative control): the same questions and ids, with every label drawn again,
  train and test independently, so a test item's vault is independent of its twin's (agreement is
  near 1 in 4, and the card states it). No strategy should beat the majority baseline here.

The test items come in another order than their twins, and ``meta.same_as_twin`` says whether an
item's label equals its twin's. Same seed: byte-identical files.
"""

from __future__ import annotations

import random
from pathlib import Path

from critique.base.vocab import CONTROL_NEG, CONTROL_POS
from critique.datasets.rawfiles import balanced_positions, check_balanced
from critique.datasets.splits import DatasetCard, Item, write_dataset

POS, NEG = CONTROL_POS, CONTROL_NEG
ANSWER_SPACE = ["1", "2", "3", "4"]
N_OBJECTS = 250

TASK = ("Every object in a museum's registry was put in one of four vaults, numbered 1 to 4, when it was "
        "catalogued. Which vault (1-4) holds the object described?")

# Written for this project.
OBJECTS = ["kettle", "lantern", "compass", "teapot", "mantel clock", "telescope", "typewriter", "violin", "helmet",
           "saddle", "anchor", "barometer", "sextant", "hand mirror", "music box", "chessboard", "spinning wheel",
           "birdcage", "candlestick", "gramophone", "microscope", "sundial", "weather vane", "rocking chair",
           "ship's bell", "globe", "hourglass", "inkwell", "padlock", "tea chest", "trumpet", "umbrella",
           "walking cane", "snuff box", "pocket watch", "sewing machine", "flower vase", "ledger", "rolling pin",
           "fishing reel"]
MATERIALS = ["brass", "oak", "copper", "pewter", "walnut", "silver", "bronze", "iron", "porcelain", "tin", "glass",
             "leather", "ebony", "maple", "jade", "marble"]
FEATURES = ["a cracked handle", "a missing lid", "blue enamel trim", "an engraved owl", "a dented base",
            "painted roses", "a broken hinge", "a green patina", "carved initials", "a chipped rim",
            "a small plaque", "a red ribbon", "scorch marks", "gilded edges", "a stitched cover", "a loose screw",
            "a faded label", "a glass dome", "a wax seal", "a thin chain", "a tiny keyhole", "stamped stars",
            "a repaired leg", "a velvet lining"]
PLACES = ["lighthouse", "monastery", "shipyard", "bakery", "observatory", "railway station", "vineyard",
          "boathouse", "schoolhouse", "windmill", "theatre", "greenhouse", "post office", "sawmill", "chapel",
          "library", "warehouse", "farmhouse", "mine", "clock tower"]
TOWNS = ["Halden", "Brugge", "Tromso", "Ghent", "Cesky Krumlov", "Sintra", "Ohrid", "Kotor", "Tartu", "Visby",
         "Colmar", "Hallstatt", "Bled", "Rovinj", "Aarhus", "Lucca", "Segovia", "Dinant", "Mostar", "Bergen",
         "Valletta", "Obidos", "Sibiu", "Ronda", "Cork", "Oban", "Whitby", "Trakai", "Kuldiga", "Piran"]
SYLLABLES = ["ba", "ven", "tor", "li", "mo", "ra", "sel", "ka", "dun", "fi", "gal", "no", "pe", "quin", "ru",
             "sa", "tel", "vo", "wen", "zar", "bel", "cor", "dra", "mir"]

# {code}, {material}, {object}, {feature}, {place}, {town}, {year}: train wordings, then test paraphrases.
# "{a_material}" is the material with its article ("an oak"), and so on.
TRAIN_WORDINGS = [
    "Registry entry {code}: {a_material} {object} with {feature}, found in {a_place} near {town} in {year}.",
    "Object {code} is {a_material} {object} with {feature}. It was recovered from {a_place} near {town} in {year}.",
    "Catalogue record {code}: {material} {object}, notable for {feature}; origin: {a_place} near {town}, {year}.",
]
TEST_WORDINGS = [
    "The {object} registered as {code} is made of {material} and has {feature}; it came from {a_place} near "
    "{town} in {year}.",
    "In {year}, {a_object} of {material} with {feature} (registry name {code}) was found in {a_place} close to "
    "{town}.",
    "Found near {town} in {a_place} in {year}: {code}, {a_material} {object} bearing {feature}.",
]
SLOTS = ("code", "material", "object", "feature", "place", "town", "year")


def _article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _wording(template: str, slots: dict) -> str:
    return template.format(**slots, **{f"a_{k}": _article(slots[k]) for k in ("material", "object", "place")})


def _code_names(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        name = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice([2, 3]))).capitalize()
        if name not in names:
            names.append(name)
    return names


def objects(seed: int = 0, n: int = N_OBJECTS) -> list[dict]:
    """The registry: ``n`` objects with distinct code names and distinct descriptions, and the
    wording of each one's train question and test paraphrase. Labels are not part of it."""
    rng = random.Random(f"controls:{seed}")
    codes = _code_names(rng, n)
    seen: set[tuple] = set()
    registry = []
    for code in codes:
        while True:
            slots = {"material": rng.choice(MATERIALS), "object": rng.choice(OBJECTS),
                     "feature": rng.choice(FEATURES), "place": rng.choice(PLACES), "town": rng.choice(TOWNS),
                     "year": rng.randint(1850, 1949)}
            key = tuple(slots.values())
            if key not in seen:
                seen.add(key)
                break
        registry.append({"code": code, **slots, "train_wording": rng.randrange(len(TRAIN_WORDINGS)),
                         "test_wording": rng.randrange(len(TEST_WORDINGS))})
    return registry


def _questions(seed: int, n: int) -> tuple[list[dict], list[int]]:
    """The registry, and the order in which the test paraphrases are listed (a permutation of it)."""
    registry = objects(seed, n)
    order = list(range(n))
    random.Random(f"controls:{seed}:test-order").shuffle(order)
    return registry, order


def _items(registry: list[dict], order: list[int], train_labels: list[int], test_labels: list[int]):
    """Train items in registry order, test items in ``order``; labels are 0-based, by registry index."""
    n = len(registry)
    train = []
    for index, entry in enumerate(registry):
        slots = {k: entry[k] for k in SLOTS}
        train.append(Item(f"ctl-{index:04d}", _wording(TRAIN_WORDINGS[entry["train_wording"]], slots),
                          ANSWER_SPACE[train_labels[index]], None,
                          {"object": slots, "wording": entry["train_wording"]}))
    test = []
    for position, index in enumerate(order):
        entry = registry[index]
        slots = {k: entry[k] for k in SLOTS}
        test.append(Item(f"ctl-{n + position:04d}", _wording(TEST_WORDINGS[entry["test_wording"]], slots),
                         ANSWER_SPACE[test_labels[index]], None,
                         {"object": slots, "wording": entry["test_wording"], "twin": train[index].id,
                          "same_as_twin": test_labels[index] == train_labels[index]}))
    return train, test


def _card(name: str, seed: int, description: str, train: list[Item], test: list[Item], control: str):
    same = sum(i.meta["same_as_twin"] for i in test)
    line = f"test labels equal to their twin's train label: {same} of {len(test)}"
    return DatasetCard(
        name=name, task=TASK, answer_space=ANSWER_SPACE, source="generated by critique.datasets.controls",
        license="Apache-2.0 (generated by this project)", version="1", seed=seed,
        build_command=f"critique datasets build {name} --seed {seed}", description=description,
        extra={"control": control, "twin_agreement": {"same": same, "of": len(test)}, "summary": [line],
               "wordings": {"train": TRAIN_WORDINGS, "test": TEST_WORDINGS}},
    )


def _write(out: Path, card: DatasetCard, train: list[Item], test: list[Item]):
    for split, items in (("train", train), ("test", test)):
        check_balanced(items, ANSWER_SPACE, f"{out}/{split}.jsonl")
    return write_dataset(out, card, train, test)


def _build(out: Path, name: str, seed: int, n: int, train_labels: list[int], test_labels: list[int],
           description: str, control: str):
    """One control: the seeded questions with these labels, checked balanced and written to ``out``."""
    registry, order = _questions(seed, n)
    train, test = _items(registry, order, train_labels, test_labels)
    return _write(out, _card(name, seed, description, train, test, control), train, test)


def build_positive(out: Path, seed: int = 0, raw: Path | None = None, n: int = N_OBJECTS):
    """Generate control-pos into ``out``: each test item carries its train twin's arbitrary label."""
    labels = balanced_positions(random.Random(f"{POS}:{seed}"), n, len(ANSWER_SPACE))
    return _build(out, POS, seed, n, labels, labels,
                  "Positive control: arbitrary vault numbers of invented objects; each test question paraphrases one "
                  "train question and has its label, so copying the label of the most similar train example is right "
                  "and nothing else is.", "positive")


def build_negative(out: Path, seed: int = 0, raw: Path | None = None, n: int = N_OBJECTS):
    """Generate control-neg into ``out``: control-pos's questions, every label drawn again (train and test
    independently), so no strategy can beat the majority baseline but by chance."""
    train_labels = balanced_positions(random.Random(f"{NEG}:{seed}:train"), n, len(ANSWER_SPACE))
    test_labels = balanced_positions(random.Random(f"{NEG}:{seed}:test"), n, len(ANSWER_SPACE))
    return _build(out, NEG, seed, n, train_labels, test_labels,
                  "Negative control: control-pos's questions with every label drawn at random, train and test "
                  "independently, so a test label is independent of its twin's and of the question.", "negative")
