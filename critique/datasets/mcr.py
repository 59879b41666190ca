"""mcr: MCRank (token level, 3 conditions, 5 items) as 4-option multiple choice.

Each upstream instance lists items, conditions in natural language, the gold ordering
(``label``) and the conditions in the order they apply (``label_c``: low priority first,
so a later condition overrides an earlier one). The conditions we can read (character
count, fixed positions, moving the first/last item, birth years from ``years``) are
parsed into operations; category, size, height and location conditions need world
knowledge and stay opaque.

Three wrong orderings are made from the mistakes a reader makes, computed with the
operations where the instance allows: conditions applied in another priority order, one
condition ignored, one read in the opposite direction, a lower-priority condition applied
last. Only when those give fewer than three distinct orderings are neighbouring items of
the gold ordering swapped. A candidate that differs from the gold ordering only among
items of equal length is never used (upstream breaks such ties arbitrarily, so it could
be just as right). Same seed and raw file: byte-identical output.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from pathlib import Path

from critique.datasets.rawfiles import (balanced_positions, check_balanced, fail, raw_checksums, raw_folder, read_jsonl,
                                       require)
from critique.datasets.splits import DatasetCard, DatasetError, Item, write_dataset

NAME = "mcr"
ANSWER_SPACE = ["1", "2", "3", "4"]
RAW_FILE = "3-conditions_5-items.jsonl"
N_TRAIN = N_TEST = 250
BUILDER = 2  # 1: split record by record, so instances with the same item set could straddle it

# How the conditions combine is what the agent is to learn (from critiques): the task text never says it.
TASK = (
    "Each question asks to sort a few items under several conditions, each with a priority "
    "(high, medium or low), and shows four candidate orderings of the items. Answer with the "
    "number (1-4) of the candidate ordering that sorts the items as the conditions ask."
)


@dataclass(frozen=True)
class Op:
    kind: str  # length, move, first_to_end, last_to_start, born, birthday, opaque
    args: tuple = ()


_PATTERNS = [
    (r"character count from the (smallest|largest)", lambda m: Op("length", (m[1] == "largest",))),
    (r'^Item "(.+)" .*should be the last from (left|right)', lambda m: Op("move", (m[1], m[2] == "left"))),
    (r"^First item in the final sorted order", lambda m: Op("first_to_end")),
    (r"^Last item in the final sorted order", lambda m: Op("last_to_start")),
    (r"^Items? that born (after|before) (\d{4}) .*at the (beginning|end)",
     lambda m: Op("born", (m[1] == "after", int(m[2]), m[3] == "beginning"))),
    (r"birthday from the (oldest|newest)", lambda m: Op("birthday", (m[1] == "newest",))),
]


def parse(condition: str) -> Op:
    """The operation a condition names; ``opaque`` when it needs world knowledge."""
    for pattern, make in _PATTERNS:
        match = re.search(pattern, condition, flags=re.IGNORECASE)
        if match:
            return make(match)
    return Op("opaque")


def reverse(op: Op) -> Op | None:
    """The same condition read the other way round (None if it has no direction)."""
    if op.kind in ("length", "birthday"):
        return Op(op.kind, (not op.args[0],))
    if op.kind == "move":
        return Op("move", (op.args[0], not op.args[1]))
    if op.kind == "born":
        return Op("born", op.args[:2] + (not op.args[2],))
    return {"first_to_end": Op("last_to_start"), "last_to_start": Op("first_to_end")}.get(op.kind)


def apply(op: Op, order: list[str], years: dict[str, int]) -> list[str] | None:
    """``order`` after one operation; None when it cannot be computed."""
    year = lambda item: years.get(item.replace(" ", "_"), years.get(item))  # noqa: E731
    if op.kind == "length":
        return sorted(order, key=len, reverse=op.args[0])
    if op.kind == "move":
        rest = [i for i in order if i != op.args[0]]
        return rest + [op.args[0]] if op.args[1] else [op.args[0]] + rest
    if op.kind == "first_to_end":
        return order[1:] + order[:1]
    if op.kind == "last_to_start":
        return order[-1:] + order[:-1]
    if op.kind in ("born", "birthday") and all(year(i) is not None for i in order):
        if op.kind == "birthday":
            return sorted(order, key=year, reverse=op.args[0])
        after, cut, front = op.args
        hit = [i for i in order if (year(i) > cut if after else year(i) < cut)]
        miss = [i for i in order if i not in hit]
        return hit + miss if front else miss + hit
    return None


def run(ops: list[Op], order: list[str], years: dict[str, int]) -> list[str] | None:
    for op in ops:
        order = apply(op, order, years)
        if order is None:
            return None
    return order


def _from_scratch(items, ops, years) -> list[tuple[str, list[str] | None]]:
    """Variants of the whole pipeline (mistake, ordering), applied to the items."""
    variants = [("priorities swapped", list(p)) for p in itertools.permutations(ops) if list(p) != ops]
    variants += [(f"{_rank(k, ops)} condition ignored", ops[:k] + ops[k + 1:]) for k in range(len(ops))]
    variants += [(f"{_rank(k, ops)} condition reversed", ops[:k] + [reverse(op)] + ops[k + 1:])
                 for k, op in enumerate(ops) if reverse(op)]
    return [(why, run(v, items, years)) for why, v in variants]


def _from_gold(gold, ops, years) -> list[tuple[str, list[str] | None]]:
    """Variants computed from the gold ordering: they need only the conditions involved."""
    top, out = ops[-1], []
    out += [(f"{_rank(k, ops)} condition applied last", apply(op, gold, years)) for k, op in enumerate(ops[:-1])]
    undo = {"first_to_end": Op("last_to_start"), "last_to_start": Op("first_to_end")}.get(top.kind)
    before_top = apply(undo, gold, years) if undo else None
    top_name = _rank(len(ops) - 1, ops)
    out.append((f"{top_name} condition ignored", before_top))
    if top.kind == "move":  # moving an item does not depend on where it was
        out.append((f"{top_name} condition reversed", apply(reverse(top), gold, years)))
    elif before_top is not None:
        out.append((f"{top_name} condition reversed", apply(reverse(top), before_top, years)))
    return out


def _rank(k: int, ops: list[Op]) -> str:
    """A condition's priority by its place in application order (lowest first)."""
    names = {1: ["only"], 2: ["low-priority", "high-priority"], 3: ["low-priority", "medium-priority", "high-priority"]}
    return names.get(len(ops), [f"priority-{n + 1}" for n in range(len(ops))])[k]


def _swaps(gold: list[str]) -> list[tuple[str, list[str]]]:
    """The gold ordering with two items swapped, neighbours first."""
    swaps = []
    for j, k in sorted(itertools.combinations(range(len(gold)), 2), key=lambda p: (p[1] - p[0], p)):
        order = list(gold)
        order[j], order[k] = order[k], order[j]
        swaps.append(("neighbours swapped" if k == j + 1 else "two items swapped", order))
    return swaps


def distractors(rng: random.Random, record: dict) -> list[tuple[str, list[str]]] | None:
    """Three distinct wrong orderings, each with the mistake that produced it; None when
    the items' lengths tie so much that no three safe ones exist."""
    items, gold, years = record["items"], record["label"], record.get("years") or {}
    ops = [parse(c) for c in record["label_c"]]
    computed = _from_scratch(items, ops, years) + _from_gold(gold, ops, years)
    chosen, seen = [], [gold]
    rng.shuffle(computed)
    fallback = _swaps(gold)
    for why, order in computed + fallback:
        if order is None or any(_tie_equal(order, s) for s in seen):
            continue
        seen.append(order)
        chosen.append((why, order))
        if len(chosen) == 3:
            return chosen
    return None


def _tie_equal(a: list[str], b: list[str]) -> bool:
    """Same ordering up to items of equal length trading places (upstream's ties)."""
    return [len(x) for x in a] == [len(x) for x in b] and sorted(a) == sorted(b)


def _check(path: Path, line: int, record: dict) -> None:
    for key in ("items", "conditions", "label", "label_c"):
        if not isinstance(record.get(key), list) or not record[key]:
            raise fail(path, line, f"missing or empty field {key!r}")
        if not all(isinstance(x, str) and x.strip() for x in record[key]):
            raise fail(path, line, f"field {key!r} must be a list of non-empty strings")
    if len(set(record["items"])) != len(record["items"]) or sorted(record["label"]) != sorted(record["items"]):
        raise fail(path, line, "label is not an ordering of the distinct items")
    if sorted(record["label_c"]) != sorted(record["conditions"]):
        raise fail(path, line, "label_c is not an ordering of the conditions")
    if len(record["items"]) < 3:
        raise fail(path, line, "needs at least three items to make four candidate orderings")


def question(record: dict, options: list[list[str]]) -> str:
    """The study's question format ("Given the following conditions: [...], sort the list of items
    [...]"), then the candidate orderings."""
    lines = [f"Given the following conditions: [{'; '.join(record['conditions'])}], "
             f"sort the list of items [{', '.join(record['items'])}].", "Candidate orderings:"]
    lines += [f"{n}. {', '.join(o)}" for n, o in enumerate(options, start=1)]
    return "\n".join(lines)


def make_item(line: int, record: dict, wrong: list[tuple[str, list[str]]], gold_position: int) -> Item:
    options = [order for _, order in wrong]
    options.insert(gold_position, record["label"])
    mistakes = [why for why, _ in wrong]
    mistakes.insert(gold_position, "gold")
    meta = {"line": line, "type": record.get("type", ""), "gold_order": record["label"],
            "conditions_by_priority": record["label_c"], "options": mistakes}
    return Item(f"mcr-{line:04d}", question(record, options), str(gold_position + 1), None, meta)


def item_set(record: dict) -> frozenset:
    """The items an instance ranks, order-free: instances with the same set share their items'
    attributes (length, category, birth year), so they must stay on one side of the split."""
    return frozenset(record["items"])


def split_by_item_set(rng: random.Random, records: list[tuple[int, dict]], n_train: int, n_test: int):
    """(train, test) lists of (line, record, wrong orderings). Records come in a seeded order,
    those sharing an item set together; train is filled first, then test. A group goes wholly
    to one side: where it does not fit the room left, its last records are left out, never put
    on the other side. Records without three safe wrong orderings are skipped."""
    groups: dict[frozenset, list] = {}
    for line, record in rng.sample(records, len(records)):
        groups.setdefault(item_set(record), []).append((line, record))
    train: list[tuple] = []
    test: list[tuple] = []
    for group in groups.values():
        side, room = (train, n_train) if len(train) < n_train else (test, n_test)
        if len(side) >= room:
            break
        usable = [(line, record, wrong) for line, record in group
                  if (wrong := distractors(rng, record)) is not None]
        side.extend(usable[:room - len(side)])
    return train, test


def builder1_split(records: list[tuple[int, dict]], seed: int, n_train: int, n_test: int):
    """The lines builder 1 put in train and in test (it split record by record), to report the
    item sets that straddled its split."""
    rng = random.Random(seed)
    balanced_positions(rng, n_train, 4)  # builder 1 drew the answer positions first
    balanced_positions(rng, n_test, 4, offset=1)
    lines = []
    for line, record in rng.sample(records, len(records)):
        if len(lines) == n_train + n_test:
            break
        if distractors(rng, record) is not None:
            lines.append(line)
    return lines[:n_train], lines[n_train:]


def item_set_report(records: list[tuple[int, dict]], splits: dict[str, list[int]], before) -> dict:
    """Item sets shared among the upstream records, and how many straddle a split."""
    by_line = {line: item_set(record) for line, record in records}
    count: dict[frozenset, int] = {}
    for key in by_line.values():
        count[key] = count.get(key, 0) + 1
    shared = {key for key, n in count.items() if n > 1}

    def straddling(train, test) -> int:
        return len({by_line[n] for n in train} & {by_line[n] for n in test})

    return {"records": len(records), "distinct": len(count), "shared": len(shared),
            "records_sharing": sum(count[key] for key in shared),
            "shared_in_this_dataset": len(shared & {by_line[n] for lines in splits.values() for n in lines}),
            "straddling": straddling(splits["train"], splits["test"]),
            "straddling_builder1": straddling(*before)}


def build(out: Path, seed: int = 0, raw: Path | None = None, n_train: int = N_TRAIN, n_test: int = N_TEST):
    """Sample ``n_train + n_test`` instances of ``RAW_FILE`` under ``raw`` into ``out``; instances
    with the same item set stay on one side of the split."""
    folder = raw_folder(raw, NAME)
    (path,) = require(folder, RAW_FILE)
    records = []
    for line, record in read_jsonl(path):
        _check(path, line, record)
        records.append((line, record))
    rng = random.Random(seed)
    chosen = dict(zip(("train", "test"), split_by_item_set(rng, records, n_train, n_test)))
    if len(chosen["train"]) + len(chosen["test"]) < n_train + n_test:
        raise DatasetError(f"{path}: only {len(chosen['train']) + len(chosen['test'])} usable instances, "
                           f"{n_train + n_test} needed")
    splits = {}
    for split, offset in (("train", 0), ("test", 1)):
        positions = balanced_positions(rng, len(chosen[split]), 4, offset=offset)
        splits[split] = [make_item(line, record, wrong, pos) for (line, record, wrong), pos in
                         zip(chosen[split], positions)]
        check_balanced(splits[split], ANSWER_SPACE, f"{out}/{split}.jsonl")
    sets = item_set_report(records, {s: [line for line, _, _ in chosen[s]] for s in chosen},
                           builder1_split(records, seed, n_train, n_test))
    if sets["straddling"]:
        raise DatasetError(f"{path}: {sets['straddling']} item sets straddle the split (a bug in the builder)")
    card = DatasetCard(
        name=NAME, task=TASK, answer_space=ANSWER_SPACE,
        source="MCRank (Pezeshkpour & Hruschka), github.com/megagonlabs/MCR @ db2659835e4b, "
               f"data/Token-level/{RAW_FILE}",
        license="BSD-3-Clause (repository); component sources per its NOTICE "
                "(CC BY-SA 4.0, public domain, Apache-2.0, CC BY-NC 4.0)",
        version=f"MCRank token-level {RAW_FILE}; builder {BUILDER}", seed=seed,
        build_command=f"critique datasets build {NAME} --raw DIR --seed {seed}",
        description="MCRank instances as 4-option multiple choice: the gold ordering and three orderings "
                    "produced by plausible mistakes (priority swapped, condition ignored or reversed). "
                    "Instances that rank the same set of items stay on one side of the train/test split "
                    "(extra.item_sets).",
        extra={"raw_sha256": raw_checksums(folder, [path]), "item_sets": sets,
               "summary": [f"{sets['shared']} item sets are shared by {sets['records_sharing']} of the "
                           f"{sets['records']} upstream records; {sets['straddling']} straddle train/test "
                           f"(builder 1's record-by-record split, same seed: {sets['straddling_builder1']})"]},
    )
    return write_dataset(out, card, splits["train"], splits["test"])
