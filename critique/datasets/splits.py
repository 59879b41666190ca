"""The one on-disk split format that every dataset uses.

A dataset lives in a folder::

    <dir>/dataset.json          the dataset card (DatasetCard)
    <dir>/train.jsonl           one Item per line
    <dir>/test.jsonl
or, for preference data (card.kind == "preference"), one folder per user::

    <dir>/<user>/train.jsonl
    <dir>/<user>/test.jsonl

Every problem found while reading names the file, the line and the problem
(``DatasetError``). ``write_dataset`` validates everything first and writes
into a temporary folder that is renamed into place, so a failure writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from critique.base import labels
from critique.base.checksum import dataset_checksum, files_checksum  # noqa: F401 - files_checksum: re-exported

CARD = "dataset.json"
SPLITS = ("train", "test")
KINDS = ("single", "preference")


class DatasetError(ValueError):
    """A dataset problem, with the file and line it was found at."""


# A preference user is a folder of the dataset and names memory files: letters, digits, ._-@+ only.
USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]{0,99}")


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The text of a file; a byte the encoding cannot decode is a DatasetError naming file and line."""
    data = Path(path).read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(f"{path}:{line}: not {encoding} text (byte 0x{data[exc.start]:02x} at column {column})") \
            from None


def check_user(user, where: str) -> str:
    """A preference user's name, as a string safe for a folder name; DatasetError otherwise."""
    if not isinstance(user, str) or not USER_NAME.fullmatch(user):
        raise DatasetError(f"{where}: user {user!r} is not a valid name (letters, digits and ._-@+, "
                           f"not starting with a dot or dash, at most 100 characters)")
    return user


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    answer: str
    user: str | None = None
    meta: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        record = {"id": self.id, "question": self.question, "answer": self.answer}
        if self.meta:
            record["meta"] = self.meta
        return record


@dataclass
class DatasetCard:
    name: str
    task: str  # the instruction shown to the model before each question
    answer_space: list[str]
    kind: str = "single"
    source: str = ""
    license: str = ""
    version: str = ""
    seed: int | None = None
    build_command: str = ""
    description: str = ""
    checksums: dict = field(default_factory=dict)
    users: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def response_schema(self) -> dict:
        """JSON schema of the performance agent's answer."""
        return answer_schema(self.answer_space)

    def to_json(self) -> dict:
        record = asdict(self)
        record["response_schema"] = self.response_schema
        return record

    @classmethod
    def from_json(cls, record: dict, path: Path) -> "DatasetCard":
        missing = [k for k in ("name", "task", "answer_space") if k not in record]
        if missing:
            raise DatasetError(f"{path}:1: dataset card lacks {', '.join(missing)}")
        known = {f for f in cls.__dataclass_fields__}
        card = cls(**{k: v for k, v in record.items() if k in known})
        for key in ("name", "task"):
            if not isinstance(getattr(card, key), str) or not getattr(card, key).strip():
                raise DatasetError(f"{path}:1: {key} must be a non-empty string, not {getattr(card, key)!r}")
        if card.kind not in KINDS:
            raise DatasetError(f"{path}:1: kind must be one of {KINDS}, not {card.kind!r}")
        space = card.answer_space
        if not isinstance(space, list) or not all(isinstance(a, str) and a.strip() for a in space):
            raise DatasetError(f"{path}:1: answer_space must be a list of labels (strings), not {space!r}")
        if len(space) < 2 or len(set(space)) != len(space):
            raise DatasetError(f"{path}:1: answer_space needs two or more distinct labels")
        trouble = labels.problem(space)
        if trouble:
            raise DatasetError(f"{path}:1: answer_space {trouble}")
        if not isinstance(card.users, list):
            raise DatasetError(f"{path}:1: users must be a list of names, not {card.users!r}")
        for user in card.users:
            check_user(user, f"{path}:1")
        return card


def answer_schema(answer_space: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(answer_space)}},
        "required": ["answer"],
        "additionalProperties": False,
    }


@dataclass
class Dataset:
    card: DatasetCard
    path: Path
    train: list[Item]
    test: list[Item]
    train_kept: str = "all"  # what a limit kept of train: all, first (the first N items) or twins (of the test kept)

    @property
    def name(self) -> str:
        return self.card.name

    @property
    def checksum(self) -> str:
        return dataset_checksum(self.path)

    def limited(self, limit: int | None) -> "Dataset":
        """The first ``limit`` train and test items (per user for preference data). A dataset whose test items
        each name their twin in train (``meta.twin``: the controls) keeps, instead of the first train items, the
        twins of the test items it keeps, in train's order: a limited control still has its twins to copy."""
        if not limit:
            return self
        test = _first_per_user(self.test, limit)
        twins = twins_of(test, self.train)
        if twins:
            return Dataset(self.card, self.path, [item for item in self.train if item.id in twins], test, "twins")
        return Dataset(self.card, self.path, _first_per_user(self.train, limit), test, "first")


def twins_of(test: list[Item], train: list[Item]) -> set[str] | None:
    """The ids of the train twins of ``test`` (each item's ``meta.twin``), or None unless every test item names
    a twin that train holds."""
    ids = {(item.user, item.id) for item in train}
    twins = [(item.user, (item.meta or {}).get("twin")) for item in test]
    if not twins or any(twin is None or (user, twin) not in ids for user, twin in twins):
        return None
    return {twin for _, twin in twins}


def _first_per_user(items: list[Item], limit: int) -> list[Item]:
    seen: dict[str | None, int] = {}
    kept = []
    for item in items:
        if seen.get(item.user, 0) < limit:
            seen[item.user] = seen.get(item.user, 0) + 1
            kept.append(item)
    return kept


def iter_json_lines(path: Path):
    """(line number, object) for each non-blank line; DatasetError naming file and line otherwise."""
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise DatasetError(f"{path}:{number}: a line must be a JSON object")
        yield number, record


def read_items(path: Path, answer_space: list[str], user: str | None = None) -> list[Item]:
    """Read one split file; every problem names the file and line."""
    if not path.exists():
        raise DatasetError(f"{path}: split file is missing")
    items, ids = [], set()
    for number, record in iter_json_lines(path):
        missing = [k for k in ("id", "question", "answer") if k not in record]
        if missing:
            raise DatasetError(f"{path}:{number}: missing field {', '.join(missing)}")
        item_id, answer = str(record["id"]), str(record["answer"])
        if answer not in answer_space:
            raise DatasetError(f"{path}:{number}: label {answer!r} is not in the answer space {answer_space}")
        if item_id in ids:
            raise DatasetError(f"{path}:{number}: duplicate id {item_id!r}")
        if not str(record["question"]).strip():
            raise DatasetError(f"{path}:{number}: empty question")
        ids.add(item_id)
        items.append(Item(item_id, str(record["question"]), answer, user, record.get("meta") or {}))
    return items


def check_disjoint(train: list[Item], test: list[Item], where: Path) -> None:
    """Train and test share no id and no question (per user)."""
    train_ids = {(i.user, i.id) for i in train}
    train_questions = {(i.user, i.question) for i in train}
    for number, item in enumerate(test, start=1):
        if (item.user, item.id) in train_ids or (item.user, item.question) in train_questions:
            raise DatasetError(f"{where}:{number}: test item {item.id!r} overlaps the train split")


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a dataset folder."""
    path = Path(path)
    card_path = path / CARD
    if not card_path.exists():
        raise DatasetError(f"{card_path}: no dataset card here (is {path} a dataset folder?)")
    try:
        record = json.loads(read_text(card_path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{card_path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise DatasetError(f"{card_path}:1: a dataset card must be a JSON object")
    card = DatasetCard.from_json(record, card_path)
    users = card.users if card.kind == "preference" else [None]
    if card.kind == "preference" and not users:
        raise DatasetError(f"{card_path}:1: preference data must list its users")
    splits: dict[str, list[Item]] = {s: [] for s in SPLITS}
    for user in users:
        folder = path / user if user else path
        for split in SPLITS:
            splits[split].extend(read_items(folder / f"{split}.jsonl", card.answer_space, user))
        if not any(i.user == user for i in splits["train"]):
            raise DatasetError(f"{folder / 'train.jsonl'}: the train split is empty (nothing to learn from)")
        check_disjoint(
            [i for i in splits["train"] if i.user == user],
            [i for i in splits["test"] if i.user == user],
            folder / "test.jsonl",
        )
    return Dataset(card, path, splits["train"], splits["test"])


def _split_lines(items: list[Item]) -> str:
    return "".join(json.dumps(i.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for i in items)


def dataset_files(out: str | Path, card: DatasetCard, train: list[Item], test: list[Item]) -> dict[str, str]:
    """The validated files of a dataset folder, by name relative to it (errors name them under `out`).
    Sets ``card.users`` and ``card.checksums``."""
    out = Path(out)
    users = sorted({i.user for i in train + test}, key=str) if card.kind == "preference" else [None]
    for user in users:
        if user is not None:
            check_user(user, str(out))
    files: dict[str, str] = {}
    for user in users:
        prefix = f"{user}/" if user else ""
        for split, items in (("train", train), ("test", test)):
            mine = [i for i in items if i.user == user]
            _validate_in_memory(mine, card.answer_space, out / f"{prefix}{split}.jsonl")
            files[f"{prefix}{split}.jsonl"] = _split_lines(mine)
        check_disjoint([i for i in train if i.user == user], [i for i in test if i.user == user],
                       out / f"{prefix}test.jsonl")
    card.users = [u for u in users if u]
    card.checksums = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(files.items())}
    files[CARD] = json.dumps(card.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return files


def write_dataset(out: str | Path, card: DatasetCard, train: list[Item], test: list[Item]) -> Dataset:
    """Validate, then write the dataset folder atomically (all or nothing)."""
    return write_files(out, dataset_files(out, card, train, test))


def write_files(out: str | Path, files: dict[str, str]) -> Dataset:
    """Write the files of `dataset_files` as the folder `out`, atomically (all or nothing)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; a data folder is for every user
    try:
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(text.encode("utf-8"))  # as files_checksum counts it, on every OS
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return load_dataset(out)


def _validate_in_memory(items: list[Item], answer_space: list[str], where: Path) -> None:
    ids = set()
    for number, item in enumerate(items, start=1):
        if item.answer not in answer_space:
            raise DatasetError(f"{where}:{number}: label {item.answer!r} is not in the answer space {answer_space}")
        if item.id in ids:
            raise DatasetError(f"{where}:{number}: duplicate id {item.id!r}")
        if not item.question.strip():
            raise DatasetError(f"{where}:{number}: empty question")
        ids.add(item.id)

