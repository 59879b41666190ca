"""Presets: recipes for public classification sets, each a small TOML file in critique/datasets/presets/ that names
the set's hub dataset (and the revision, config, folder or files to read), its question, label and id columns,
the task text, the license and the citation, and where its schema was read from.

`critique datasets import preset:NAME[:CONFIG]` imports one from the hub, or, with `--from PATH`, from a local file
or folder in the set's own schema (a file of its rows, a folder `save_to_disk` wrote, or a local copy of its hub
repository, whose folder for the config is read when it has one), through the one importer (critique.datasets.hub),
as the dataset folder <data>/NAME[-CONFIG]. `--dataset preset:NAME[:CONFIG]` reads that folder, importing from the
hub on first use. A config the preset refuses (a free-form task) is refused in one line that says why.

Two layouts. "rows": each row is an item; rows whose label the preset's label_pattern does not match are left out
and counted. "context_shots" (MemoryAgentBench's Test_Time_Learning): the config picks the row whose
metadata.source it names; its context holds the labeled shots, "<text>\\nlabel: <label>" blocks separated by a blank
line, which are the train items, and its questions and answers lists the queries, which are the test items.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from critique.datasets import hub
from critique.datasets.columns import Columns
from critique.datasets.splits import CARD, Dataset, DatasetError, load_dataset

PREFIX = "preset:"
FOLDER = Path(__file__).resolve().parent / "presets"
CONFIG_AS = ("name", "data_dir", "source")  # a hub config; a folder of the hub repository; a row's metadata.source
LAYOUTS = ("rows", "context_shots")
SHOT_COLUMNS = ("context", "questions", "answers", "metadata")


@dataclass(frozen=True)
class Preset:
    """One preset file. Configs: those it imports (none: the set has one); config_names: what the set calls a
    config, where that differs; refused: the configs it refuses, and why."""

    name: str
    title: str
    hub: str
    license: str
    citation: str
    schema: str  # where the set's schema was read from
    task: str
    columns: Columns
    configs: tuple[str, ...] = ()
    default: str | None = None
    refused: dict = field(default_factory=dict)
    tasks: dict = field(default_factory=dict)  # the task text of a config, where it has its own
    config_names: dict = field(default_factory=dict)
    config_as: str = "name"
    revision: str | None = None  # the hub revision to read (a Parquet export, where main holds a loading script)
    data_files: dict | None = None
    label_pattern: str | None = None
    class_names: bool = False  # the label column holds class numbers, decoded by the names its schema keeps
    layout: str = "rows"
    split: str | None = None  # context_shots: the split that holds the rows

    def config_for(self, config: str | None) -> str | None:
        """The config to import (the default when none is named); one the preset refuses, or does not know, is
        refused with the reason."""
        config = config or self.default
        if config in self.refused:
            raise DatasetError(f"{PREFIX}{self.name}:{config} is not imported: {self.refused[config]}")
        known = ", ".join(self.configs) + (f" (refused: {', '.join(self.refused)})" if self.refused else "")
        if config is None and self.configs:
            raise DatasetError(f"{PREFIX}{self.name} needs a config, {PREFIX}{self.name}:CONFIG, one of {known}")
        if config is not None and config not in self.configs:
            raise DatasetError(f"{PREFIX}{self.name}: no config {config!r}; " +
                               (f"one of {known}" if self.configs else "the set has none"))
        return config

    def named(self, config: str | None) -> str:
        """NAME, or NAME:CONFIG when the preset has more than one config."""
        return self.name + (f":{config}" if config and len(self.configs) > 1 else "")

    def source(self, config: str | None) -> str:
        return PREFIX + self.named(config)

    def folder(self, config: str | None) -> str:
        return self.named(config).replace(":", "-")

    def load_options(self, config: str | None, local: Path | None) -> dict:
        """What `hub.load_splits` passes to `datasets.load_dataset` for `config`, from the hub or from the local
        copy `local` (no revision there; the config's folder only where it has one)."""
        in_set = self.config_names.get(config, config)
        options = {"name": in_set if self.config_as == "name" else None}
        if self.config_as == "data_dir" and in_set and (local is None or (local / in_set).is_dir()):
            options["data_dir"] = in_set
        if self.data_files:
            options["data_files"] = self.data_files
        if self.revision and local is None:
            options["revision"] = self.revision
        return options

    def task_for(self, config: str | None) -> str:
        return self.tasks.get(config, self.task)


def is_preset(source: str) -> bool:
    return str(source).startswith(PREFIX)


def names() -> list[str]:
    return sorted(path.stem for path in FOLDER.glob("*.toml"))


def load(name: str) -> Preset:
    """The preset `name`, read from its file; a key it does not know, or a missing one, is refused."""
    path = FOLDER / f"{name}.toml"
    if name not in names():
        raise DatasetError(f"{PREFIX}{name}: no such preset (presets: {', '.join(names())})")
    try:
        record = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"{path}: not a valid preset file ({exc})") from None
    unknown = sorted(set(record) - {f.name for f in fields(Preset)})
    missing = [f.name for f in fields(Preset)
               if f.default is MISSING and f.default_factory is MISSING and f.name not in record]
    if unknown or missing:
        raise DatasetError(f"{path}: unknown key(s) {unknown}, missing key(s) {missing}")
    if record["name"] != name:
        raise DatasetError(f"{path}: name is {record['name']!r}, not {name!r} as the file is named")
    record["columns"] = Columns.from_record(record["columns"], f"{path} [columns]")
    record["configs"] = tuple(record.get("configs", ()))
    preset = Preset(**record)
    if preset.config_as not in CONFIG_AS or preset.layout not in LAYOUTS:
        raise DatasetError(f"{path}: config_as must be one of {CONFIG_AS} and layout one of {LAYOUTS}")
    return preset


def find(source: str) -> tuple[Preset, str | None]:
    """The preset and the config that `preset:NAME[:CONFIG]` names (its default config when none is named)."""
    name, _, config = source[len(PREFIX):].partition(":")
    preset = load(name)
    return preset, preset.config_for(config or None)


def imported(source: str, data: Path) -> Dataset:
    """`--dataset preset:NAME[:CONFIG]`: its folder under the data folder `data`, imported from the hub when there
    is none; a folder of that name that holds something else is refused."""
    preset, config = find(source)
    out = Path(data) / preset.folder(config)
    if not (out / CARD).exists():
        return import_preset(source, data)
    dataset = load_dataset(out)
    if dataset.card.source != preset.source(config):
        raise DatasetError(f"{out / CARD}: holds {dataset.card.source or 'another dataset'}, not "
                           f"{preset.source(config)}; move that folder away or use another data folder")
    return dataset


def import_preset(source: str, data: Path, local: str | Path | None = None, command: str = "",
                  **given) -> Dataset:
    """Import `preset:NAME[:CONFIG]` from the hub, or from the local file or folder `local`, as the dataset folder
    <data>/NAME[-CONFIG]; `given`: the task, test_fraction or seed that replace the preset's."""
    preset, config = find(source)
    local = Path(local).expanduser().resolve() if local is not None else None
    in_set = preset.config_names.get(config, config)
    origin = f"hf:{local}" if local else f"hf:{preset.hub}" + (f":{in_set}" if in_set else "")
    try:
        splits = hub.load_splits(origin, **preset.load_options(config, local))
    except DatasetError as exc:  # no network, no such file: said with the preset it was for
        raise DatasetError(f"{preset.source(config)}: {exc}") from None
    shape = _shots if preset.layout == "context_shots" else _rows
    splits, summary = shape(preset, in_set, origin, splits)
    columns = preset.columns.given(task=preset.task_for(config)).given(**given)
    card = {"name": preset.folder(config), "source": preset.source(config), "license": preset.license,
            "summary": summary,
            "extra": {"preset": {"name": preset.name, "config": config, "hub": preset.hub, "from": str(local or ""),
                                 "citation": preset.citation, "schema": preset.schema}}}
    return hub.import_dataset(origin, Path(data) / preset.folder(config), columns,
                              command or f"critique datasets import {preset.source(config)}", splits, card)


def _rows(preset: Preset, config: str | None, source: str, splits: dict) -> tuple[dict, list[str]]:
    """The splits less the rows whose label the preset's label_pattern does not match, and a line that counts
    them; a label column without the class names the preset decodes it by is refused. A split without the label
    column is left to the importer, which names it."""
    label = preset.columns.label
    if any(label not in table.column_names for table in splits.values()):
        return splits, []
    for split, table in splits.items():
        if preset.class_names and not getattr(table.features[label], "names", None):
            raise DatasetError(f"{source} split {split!r}: column {label!r} holds {table.features[label]}, not "
                               f"class numbers with their names (a ClassLabel), which {PREFIX}{preset.name} decodes; "
                               f"give its Parquet export or a save_to_disk folder, which keep the names")
    if not preset.label_pattern:
        return splits, []
    pattern = re.compile(preset.label_pattern)
    kept, left = {}, []
    for split, table in splits.items():
        bad = {row for row, value in enumerate(table[label]) if value is not None and not pattern.fullmatch(str(value))}
        kept[split] = table.select([row for row in range(len(table)) if row not in bad]) if bad else table
        left += [(split, row, table[row][label]) for row in sorted(bad)]
    if not left:
        return kept, []
    shown = ", ".join(f"{split!r} row {row} ({value!r})" for split, row, value in left[:5])
    return kept, [f"{len(left)} row(s) left out, their {label!r} not one of the set's labels: {shown}"
                  + (" ..." if len(left) > 5 else "")]


def _shots(preset: Preset, config: str | None, source: str, splits: dict) -> tuple[dict, list[str]]:
    """MemoryAgentBench's layout as train (the shots of the context) and test (the queries) splits."""
    import datasets  # the `datasets` library: heavy, so imported only here

    split = preset.split if preset.split in splits else next(iter(splits)) if len(splits) == 1 else None
    if split is None:
        raise DatasetError(f"{source}: no split {preset.split!r} (splits: {', '.join(splits)})")
    table = splits[split]
    for column in SHOT_COLUMNS:
        if column not in table.column_names:
            raise DatasetError(f"{source}: no column {column!r} (columns: {', '.join(table.column_names)}); "
                               f"{PREFIX}{preset.name} reads {', '.join(SHOT_COLUMNS)}")
    sources = [(meta or {}).get("source") for meta in table["metadata"]]
    rows = [row for row, name in enumerate(sources) if name == config]
    if len(rows) != 1:
        raise DatasetError(f"{source} split {split!r}: {len(rows)} rows whose metadata.source is {config!r}, not one "
                           f"(sources: {', '.join(sorted({str(s) for s in sources}))})")
    record, where = table[rows[0]], f"{source} split {split!r} row {rows[0]}"
    shots = _parse_shots(record["context"] or "", where)
    questions, answers = list(record["questions"] or []), list(record["answers"] or [])
    if len(questions) != len(answers):
        raise DatasetError(f"{where}: {len(questions)} questions but {len(answers)} answers")
    labels = []
    for n, answer in enumerate(answers):
        alternatives = answer if isinstance(answer, list) else [answer]
        if len(alternatives) != 1:
            raise DatasetError(f"{where}: column 'answers' item {n} holds {answer!r}, not one label")
        labels.append(str(alternatives[0]).strip())
    pair_ids = [str(i) for i in (record["metadata"] or {}).get("qa_pair_ids") or []]
    ids = pair_ids if len(set(pair_ids)) == len(questions) else [f"query-{n}" for n in range(len(questions))]
    train = {"question": [text for text, _ in shots], "label": [label for _, label in shots],
             "id": [f"shot-{n}" for n in range(len(shots))]}
    test = {"question": [str(q) for q in questions], "label": labels, "id": ids}
    return ({"train": datasets.Dataset.from_dict(train), "test": datasets.Dataset.from_dict(test)},
            [f"{len(shots)} labeled shots of column 'context' (train), {len(questions)} queries of 'questions' and "
             f"'answers' (test), from {where}"])


def _parse_shots(context: str, where: str) -> list[tuple[str, str]]:
    """The (text, label) shots of a context: "<text>\\nlabel: <label>" blocks separated by a blank line."""
    shots = []
    for n, block in enumerate(b.strip("\n") for b in context.split("\n\n") if b.strip()):
        text, sep, label = block.rpartition("\nlabel:")
        if not sep or not text.strip() or not label.strip():
            raise DatasetError(f"{where}: column 'context' shot {n} ({block[:60]!r}) is not '<text>\\nlabel: <label>'")
        shots.append((text.strip(), label.strip()))
    if not shots:
        raise DatasetError(f"{where}: column 'context' holds no shots")
    return shots
