"""Datasets from Hugging Face (`hf:NAME[:CONFIG]`) and from local Parquet, CSV or JSON files (`hf:./path`),
loaded through the `datasets` library and written as a dataset folder in the usual format, so that everything
downstream reads them as it reads the project's own.

Which column holds what is said by `Columns` (options of `critique datasets import`, or a small TOML or JSON
mapping file). The answer space is the label column's class names when it has them, else its distinct values.
The train and test splits are the dataset's own ("train", and "test" or else "validation") unless others are
named; a dataset with one split is cut into two with a seeded shuffle (per user for preference data). A test row
whose question is also a train question is left out and counted. Every problem names the split, the row and
the column.

An import is keyed by its origin, which its card records: a local source's resolved path and a digest of its
files, or a hub name and config. Its folder keeps the readable name hf-<name>, so one folder holds one source's
import: another source with the same folder name is refused rather than answered from the first one's data, and
a local source whose files changed is imported again.
"""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import sys
from dataclasses import fields, replace
from pathlib import Path

from critique.datasets.columns import Columns
from critique.datasets.order import ordered
from critique.datasets.splits import (CARD, Dataset, DatasetCard, DatasetError, Item, check_user, load_dataset,
                                      read_text, write_dataset)

PREFIX = "hf:"
QUESTION_COLUMNS = ("question", "text", "sentence", "input", "prompt")
LABEL_COLUMNS = ("label", "answer", "output", "labels")
TEST_SPLITS = ("test", "validation")
DATA_FILES = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}


def is_hub(source: str) -> bool:
    return str(source).startswith(PREFIX)


def parse_source(source: str) -> tuple[str, str | None]:
    """(name or local path, config) of `hf:NAME[:CONFIG]` or `hf:./path`."""
    rest = source[len(PREFIX):]
    if not rest:
        raise DatasetError(f"{source!r}: give a dataset after hf: (hf:NAME[:CONFIG] or hf:./path)")
    if _is_local(rest):
        return rest, None
    name, _, config = rest.partition(":")
    return name, config or None


def folder_name(source: str) -> str:
    """The data folder's name for a source: hf-<name>[-<config>], in characters a folder name takes."""
    name, config = parse_source(source)
    text = Path(name).expanduser().resolve().name if _is_local(name) else name.replace("/", "--")
    if config:
        text += f"-{config}"
    return "hf-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _is_local(name: str) -> bool:
    """A local file or folder (hf:./path), not a hub name."""
    return Path(name).expanduser().exists() or name.startswith((".", "/", "~"))


def load_splits(source: str, **options) -> dict:
    """The dataset's splits, as `datasets.Dataset`s by split name; `options` (name: the config, data_dir,
    data_files, revision) go to `datasets.load_dataset` with a hub name or a folder of data files."""
    import datasets  # the `datasets` library: heavy, so imported only here

    name, config = parse_source(source)
    path = Path(name).expanduser()
    try:
        if path.is_file():
            loaded = datasets.load_dataset(_file_kind(path), data_files=str(path))
        elif (path / "dataset_dict.json").exists() or (path / "dataset_info.json").exists():
            loaded = datasets.load_from_disk(str(path))
        elif _is_local(name) and not path.exists():
            raise DatasetError(f"{source}: no such file or folder")
        else:
            loaded = datasets.load_dataset(str(path) if path.exists() else name, **{"name": config, **options})
    except DatasetError:
        raise
    except Exception as exc:  # the library's own errors: no network, no such dataset, a bad file
        raise DatasetError(f"{source}: the datasets library could not load it: {type(exc).__name__}: {exc}") \
            from None
    return {"train": loaded} if isinstance(loaded, datasets.Dataset) else dict(loaded)


def _file_kind(path: Path) -> str:
    kind = DATA_FILES.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(f"{path}: not a Parquet, CSV or JSON file (known endings: {', '.join(DATA_FILES)})")
    return kind


def origin(source: str) -> dict:
    """What an import of `source` is keyed by (its card's extra.hub.origin): a local source's resolved path and the
    digest of its files (None when they are gone), or a hub name and config. Sources that share a folder name
    differ here: hf:a/data and hf:b/data, or hf:org/x and a local folder org--x."""
    place = _place(source)
    if "path" in place:
        path = Path(place["path"])
        place["digest"] = files_digest(path) if path.exists() else None
    return place


def _place(source: str) -> dict:
    """Where `source` is, without a digest: {"path": resolved path}, or {"name": hub name, "config": config}."""
    name, config = parse_source(source)
    if _is_local(name):
        return {"path": str(Path(name).expanduser().resolve())}
    return {"name": name, "config": config}


def files_digest(path: Path) -> str:
    """sha256 over a local source's files by name and content: the file, or every file under the folder but the
    hidden ones (.git, caches), which the datasets library does not read either. A changed file changes it."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(
        f for f in path.rglob("*") if f.is_file() and not any(p.startswith(".") for p in f.relative_to(path).parts))
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def imported(source: str, out: str | Path) -> Dataset:
    """`source` as the dataset folder `out`: imported on first use; read as it is while its source is unchanged
    (also when a local source's files are gone); imported again, with the columns and command it was imported
    with, when a local source's files changed. A folder that holds another source's import is refused."""
    out = Path(out)
    if not (out / CARD).exists():
        return import_dataset(source, out)
    card = _stored_card(out)
    asked = origin(source)
    _check_same_source(source, out, card, asked)
    recorded = _recorded_origin(card).get("digest")
    if asked.get("digest") in (None, recorded):
        return load_dataset(out)
    why = "its files changed since" if recorded else "no digest of its files was recorded when"
    print(f"{source}: {why} it was imported into {out}; imported again", file=sys.stderr)
    return _import(source, out, _recorded_columns(card), card.build_command, asked)


def _stored_card(out: Path) -> DatasetCard:
    """The card of the dataset folder `out`, read without its splits."""
    path = out / CARD
    try:
        record = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise DatasetError(f"{path}:1: a dataset card must be a JSON object")
    return DatasetCard.from_json(record, path)


def _recorded_origin(card: DatasetCard) -> dict:
    """The origin a card records. An import made before origins were recorded: the place its source names, its
    digest unknown (a local one is imported again once). A dataset that is no import: its source, which no hf:
    source matches."""
    recorded = (card.extra.get("hub") or {}).get("origin")
    if recorded:
        return recorded
    if is_hub(card.source):
        return {**_place(card.source), "digest": None}
    return {"source": card.source}


def _recorded_columns(card: DatasetCard) -> Columns:
    """The columns, splits and seed an import was made with, as its card records them."""
    recorded = (card.extra.get("hub") or {}).get("columns") or {}
    known = {f.name for f in fields(Columns)}
    return Columns(**{k: v for k, v in recorded.items() if k in known})


def _check_same_source(source: str, out: Path, card: DatasetCard, asked: dict) -> None:
    """Refuse `out` when it holds another source's data: a folder name is kept for the source imported first."""
    recorded = _recorded_origin(card)
    if _without_digest(recorded) != _without_digest(asked):
        raise DatasetError(f"{out / CARD}: holds the import of {card.source or 'another dataset'} "
                           f"({_named(recorded)}), not of {source} ({_named(asked)}), which has the same folder "
                           f"name; move that folder away, or import this source into another data folder "
                           f"(--data-dir or $CRITIQUE_DATA_DIR; --out for critique datasets import)")


def _without_digest(found: dict) -> dict:
    return {k: v for k, v in found.items() if k != "digest"}


def _named(found: dict) -> str:
    """An origin in words: its path, its hub name[:config], or its source."""
    if "path" in found:
        return str(found["path"])
    if "name" in found:
        return f"hub {found['name']}" + (f":{found['config']}" if found.get("config") else "")
    return f"source {found.get('source') or 'unknown'}"


def import_dataset(source: str, out: str | Path, columns: Columns = Columns(), command: str = "",
                   splits: dict | None = None, card: dict | None = None) -> Dataset:
    """Load `source` and write it as the dataset folder `out` (all or nothing), its origin recorded; the written
    Dataset. A folder that holds another source's import, or a dataset that is no import, is refused, not
    replaced. A preset (critique.datasets.preset) gives the `splits` it loaded and shaped, and the `card` fields
    it sets (its extra and summary lines are added to those found here)."""
    out = Path(out)
    asked = origin(source)
    if (out / CARD).exists():
        _check_same_source(source, out, _stored_card(out), asked)
    return _import(source, out, columns, command, asked, splits, card)


def _import(source: str, out: Path, columns: Columns, command: str, found: dict, splits: dict | None = None,
            given: dict | None = None) -> Dataset:
    """Load `source` (unless given its `splits`) and write it as `out`, its origin `found` and `given` in the card."""
    splits = load_splits(source) if splits is None else splits
    first = next(iter(splits.values()))
    columns = _columns_found(source, first.column_names, columns)
    space, to_label = _answer_space(source, splits, columns.label)
    train, test, made = _train_test(source, splits, columns, to_label)
    asked = {(item.user, item.question) for item in train}
    kept = [item for item in test if (item.user, item.question) not in asked]
    train, kept = ordered(train, columns.order, columns.seed), ordered(kept, columns.order, columns.seed)
    card = DatasetCard(
        name=folder_name(source), task=columns.task or _default_task(columns.question, space), answer_space=space,
        kind="preference" if columns.user else "single", source=source, license=_license(source, first),
        version=str(first.info.version or ""), seed=columns.seed if made else None,
        build_command=command or f"critique datasets import {shlex.quote(source)}",
        description=(first.info.description or "").strip(),
        extra={"hub": {"origin": found, "columns": {f.name: getattr(columns, f.name) for f in fields(columns)},
                       "splits": made or {"train": columns.train_split, "test": columns.test_split}},
               "summary": _summary(train, kept, len(test) - len(kept), made, columns.order, columns.seed)})
    given = dict(given or {})
    extra = {**card.extra, **given.pop("extra", {}), "summary": card.extra["summary"] + given.pop("summary", [])}
    return write_dataset(out, replace(card, **given, extra=extra), train, kept)


def _columns_found(source: str, names: list[str], columns: Columns) -> Columns:
    """`columns` with the question and label columns found by their usual names where not given; every named
    column checked."""
    found = {"question": columns.question or _first_of(QUESTION_COLUMNS, names),
             "label": columns.label or _first_of(LABEL_COLUMNS, names)}
    for role, usual in (("question", QUESTION_COLUMNS), ("label", LABEL_COLUMNS)):
        if found[role] is None:
            raise DatasetError(f"{source}: no {role} column found (looked for {', '.join(usual)}; columns: "
                               f"{', '.join(names)}); name it with --{role} COLUMN")
    columns = replace(columns, **found)
    for role in ("question", "label", "id", "user"):
        name = getattr(columns, role)
        if name is not None and name not in names:
            raise DatasetError(f"{source}: no column {name!r} for the {role} (columns: {', '.join(names)})")
    return columns


def _first_of(candidates, names) -> str | None:
    return next((c for c in candidates if c in names), None)


def _answer_space(source: str, splits: dict, label: str):
    """The labels (the column's class names, else its distinct values in sorted order) and a function from a
    cell to its label (None: no label)."""
    feature = next(iter(splits.values())).features.get(label)
    names = getattr(feature, "names", None)
    if names:
        def class_name(value):
            return names[value] if isinstance(value, int) and 0 <= value < len(names) else None
        return [str(n) for n in names], class_name
    values = sorted({str(v) for table in splits.values() for v in table[label] if v is not None})
    if len(values) < 2:
        raise DatasetError(f"{source}: the label column {label!r} holds {len(values)} distinct value(s); a task "
                           f"needs two or more")
    return values, lambda value: None if value is None else str(value)


def _items(source: str, split: str, table, columns: Columns, to_label) -> list[Item]:
    items = []
    for row, record in enumerate(table):
        where = f"{source} split {split!r} row {row}"
        question, label = record[columns.question], to_label(record[columns.label])
        if question is None or not str(question).strip():
            raise DatasetError(f"{where}: column {columns.question!r} (the question) is empty")
        if label is None:
            raise DatasetError(f"{where}: column {columns.label!r} (the label) holds {record[columns.label]!r}, "
                               f"not a label (an unlabeled split? name others with --train-split/--test-split)")
        item_id = f"{split}-{row}" if columns.id is None else str(record[columns.id])
        user = check_user(str(record[columns.user]), f"{where}: column {columns.user!r}") if columns.user else None
        items.append(Item(item_id, str(question), label, user, {"split": split, "row": row}))
    return items


def _train_test(source: str, splits: dict, columns: Columns, to_label):
    """(train, test, how they were made: None when they are the dataset's own splits). Only the splits used are
    read: a split the run does not use may be unlabeled (a benchmark's hidden test split)."""
    for role, split in (("train", columns.train_split), ("test", columns.test_split)):
        if split is not None and split not in splits:
            raise DatasetError(f"{source}: no {role} split {split!r} (splits: {', '.join(splits)})")
    train_split = columns.train_split or ("train" if "train" in splits else None)
    test_split = columns.test_split or next((s for s in TEST_SPLITS if s in splits and s != train_split), None)

    def items(split: str) -> list[Item]:
        return _items(source, split, splits[split], columns, to_label)

    if train_split and test_split:
        return items(train_split), items(test_split), None
    if not 0 < columns.test_fraction < 1:
        raise DatasetError(f"{source}: test_fraction must be in (0, 1), not {columns.test_fraction!r}")
    pool = items(train_split) if train_split else [item for split in splits for item in items(split)]
    train, test = _seeded_split(pool, columns.test_fraction, columns.seed)
    return train, test, {"from": train_split or sorted(splits), "test_fraction": columns.test_fraction,
                         "seed": columns.seed}


def _seeded_split(items: list[Item], fraction: float, seed: int) -> tuple[list[Item], list[Item]]:
    """A seeded shuffle cut in two, per user, keeping each part in the rows' order."""
    train, test = [], []
    for user in sorted({i.user for i in items}, key=str):
        mine = [i for i in items if i.user == user]
        order = list(range(len(mine)))
        random.Random(f"{seed}:{user}").shuffle(order)
        chosen = set(order[:round(len(mine) * fraction)])
        train.extend(i for n, i in enumerate(mine) if n not in chosen)
        test.extend(i for n, i in enumerate(mine) if n in chosen)
    return train, test


def _license(source: str, table) -> str:
    """The license the dataset's info or its card (README.md front matter) gives, or ''."""
    if table.info.license:
        return str(table.info.license)
    name, _ = parse_source(source)
    path = Path(name).expanduser()
    readme = (path if path.is_dir() else path.parent) / "README.md"
    if _is_local(name) and not readme.exists():
        return ""
    try:
        from huggingface_hub import DatasetCard as HubCard

        card = HubCard.load(str(readme) if _is_local(name) else name)
    except Exception:  # no card on the hub, or no network
        return ""
    value = card.data.to_dict().get("license") or ""
    return ", ".join(value) if isinstance(value, list) else str(value)


def _default_task(question: str, space: list[str]) -> str:
    return f"Read the {question} and answer with its label, one of: {', '.join(space)}."


def _summary(train: list[Item], test: list[Item], dropped: int, made, order: str, seed: int) -> list[str]:
    lines = [f"{len(train)} train / {len(test)} test items"]
    if order != "source":
        lines.append(f"each split {order} by label with seed {seed}: its first N items cover min(N, labels) labels")
    if made:
        lines.append(f"split with seed {made['seed']}: a fraction {made['test_fraction']} of the rows is test")
    if dropped:
        lines.append(f"{dropped} test row(s) left out: the same question is in train")
    return lines
