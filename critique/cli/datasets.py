"""`critique datasets ...` (list, build, download)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from critique.base.errors import UserError


def register(sub) -> None:
    parser = sub.add_parser("datasets", help="list, build and download datasets")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="build a dataset's splits (NAME or all)")
    build.add_argument("name")
    build.add_argument("--raw", help="raw upstream files: the dataset's own folder, or for `all` the folder "
                                     "holding one folder per dataset (default: $CRITIQUE_RAW_DIR or "
                                     "~/.cache/critique/raw)")
    build.add_argument("--out", help="data folder (default: $CRITIQUE_DATA_DIR or ~/.cache/critique/datasets)")
    build.add_argument("--seed", type=int, default=0)
    build.set_defaults(func=_build)
    listing = actions.add_parser("list", help="known datasets, whether they are built, and the imported ones")
    listing.add_argument("--out", help="data folder")
    listing.set_defaults(func=_list)
    download = actions.add_parser("download", help="fetch a dataset's raw upstream files (NAME or all)")
    download.add_argument("name")
    download.add_argument("--to", help="raw folder (default: $CRITIQUE_RAW_DIR or ~/.cache/critique/raw)")
    download.add_argument("--mirror", help="base URL that replaces https://raw.githubusercontent.com")
    download.set_defaults(func=_download)
    imported = actions.add_parser(
        "import", help="a Hugging Face dataset (hf:NAME[:CONFIG]), local Parquet/CSV/JSON files or a saved "
                       "dataset folder (hf:./path), or a preset (preset:NAME[:CONFIG]: a public set's recipe, "
                       "listed by `critique datasets list`), written as a dataset folder; --dataset then reads it")
    imported.add_argument("source", metavar="SOURCE", help="hf:NAME[:CONFIG], hf:./path or preset:NAME[:CONFIG]")
    imported.add_argument("--from", dest="local", metavar="PATH",
                          help="with a preset: a local file or folder in the set's own schema (its rows, a "
                               "save_to_disk folder or a copy of its hub repository) instead of the hub")
    for role, what in (("question", "the question (default: the first of question, text, sentence, input, "
                                    "prompt)"),
                       ("label", "the label (default: the first of label, answer, output, labels)"),
                       ("id", "each row's id (default: <split>-<row>)"),
                       ("user", "the user (preference data, one memory per user; default: none)")):
        imported.add_argument(f"--{role}", metavar="COLUMN", help=f"the column that holds {what}")
    imported.add_argument("--task", help="the instruction shown before each question (default: one naming the "
                                         "question column and the labels)")
    imported.add_argument("--train-split", help="the split to learn from (default: train)")
    imported.add_argument("--test-split", help="the split to answer (default: test, else validation; with "
                                               "neither, a seeded part of the train split)")
    imported.add_argument("--test-fraction", type=float, help="with one split: the fraction of its rows "
                                                              "that is test (default 0.5)")
    imported.add_argument("--seed", type=int, help="with one split: the seed of the split; with --order "
                                                   "interleaved: of each label's shuffle (default 0)")
    imported.add_argument("--order", choices=("source", "interleaved"),
                          help="the rows' order in each split, which decides what --limit N keeps (its first N): "
                               "as the source gives them (default), or interleaved by label, one item of each label "
                               "in turn, so that any first N items cover min(N, labels) labels (a set stored sorted "
                               "by label, as BANKING77 and CLINC150 are)")
    imported.add_argument("--columns", metavar="FILE", help="a mapping file (TOML or JSON) with any of the keys "
                          "question, label, id, user, task, train_split, test_split, test_fraction, seed, order; an "
                          "option given beside it wins")
    imported.add_argument("--out", help="data folder (default: $CRITIQUE_DATA_DIR or ~/.cache/critique/datasets)")
    imported.set_defaults(func=_import)


def _names(name: str, known) -> list[str]:
    if name == "all":
        return sorted(known)
    if name not in known:
        raise UserError(f"unknown dataset {name!r}; known: {', '.join(sorted(known))}, or all")
    return [name]


def raw_for(spec, raw: str | None, many: bool) -> Path | None:
    """The raw folder one dataset reads: <raw>/<subdir> for `all`, else <raw> itself."""
    from critique.datasets.registry import raw_dir

    if spec.generated:
        return None
    if raw is None or many:
        return raw_dir(raw) / spec.raw_subdir
    given = Path(raw)
    return given / spec.raw_subdir if (given / spec.raw_subdir).is_dir() else given


def _build(args) -> int:
    from critique.datasets.registry import REGISTRY, data_dir
    from critique.datasets.splits import DatasetError

    names = _names(args.name, REGISTRY)
    failed = 0
    for name in names:
        spec = REGISTRY[name]
        out = data_dir(args.out) / name
        try:
            dataset = spec.build(out, seed=args.seed, raw=raw_for(spec, args.raw, len(names) > 1))
        except DatasetError as exc:
            if len(names) == 1:
                raise
            failed += 1
            print(f"critique: error: {name}: {exc}", file=sys.stderr)
            continue
        users = f" ({len(dataset.card.users)} users)" if dataset.card.users else ""
        print(f"built {name}: {len(dataset.train)} train / {len(dataset.test)} test{users} -> {out}")
        for line in dataset.card.extra.get("summary") or []:  # what the builder wants seen (sizes, leakage)
            print(f"  {name}: {line}")
    return 2 if failed else 0


def sizes(folder: Path) -> str:
    """'train/test' item counts of a built dataset (and its users), read from the files."""
    from critique.datasets.splits import CARD

    card = json.loads((folder / CARD).read_text(encoding="utf-8"))
    users = card.get("users") or [""]
    count = {s: sum(_lines(folder / u / f"{s}.jsonl") for u in users) for s in ("train", "test")}
    prefix = f"{len(users)} users, " if card.get("users") else ""
    return f"{prefix}{count['train']}/{count['test']}"


def _lines(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def _list(args) -> int:
    from critique.datasets import preset
    from critique.datasets.registry import REGISTRY, data_dir
    from critique.datasets.splits import CARD

    print(f"{'name':16s} {'task':38s} {'answers':9s} {'built':6s} train/test")
    for name, spec in sorted(REGISTRY.items()):
        folder = data_dir(args.out) / name
        built = (folder / CARD).exists()
        size = sizes(folder) if built else ("generated on first use" if spec.generated else "-")
        print(f"{name:16s} {spec.task:38s} {'/'.join(spec.answer_space):9s} {'yes' if built else 'no':6s} {size}")
    for folder in imports(data_dir(args.out)):
        card = json.loads((folder / CARD).read_text(encoding="utf-8"))
        answers = "/".join(card.get("answer_space") or [])
        print(f"{folder.name:16s} {_cut(card.get('task') or '', 38):38s} {_cut(answers, 9):9s} {'yes':6s} "
              f"{sizes(folder)}  (imported from {card.get('source') or 'an unknown source'}; use --dataset "
              f"{card.get('source') or folder.name})")
    for name in preset.names():  # recipes for public sets: `critique datasets import preset:NAME[:CONFIG]`
        found = preset.load(name)
        configs = f"configs {', '.join(found.configs)}" if len(found.configs) > 1 else "one config"
        print(f"{preset.PREFIX + name:16s} {_cut(found.title, 38):38s} {'-':9s} {'-':6s} {found.hub}, "
              f"{found.license}; {_cut(configs, 60)} (critique datasets import {preset.PREFIX}{name}"
              f"{':CONFIG' if len(found.configs) > 1 else ''} [--from PATH])")
    return 0


def imports(folder: Path) -> list[Path]:
    """The dataset folders under the data folder ``folder`` that `critique datasets import` (or a --dataset hf:
    source on first use) wrote: those with a card that no registered dataset owns."""
    from critique.datasets.registry import REGISTRY
    from critique.datasets.splits import CARD

    if not folder.is_dir():
        return []
    return sorted(f for f in folder.iterdir() if f.name not in REGISTRY and (f / CARD).is_file())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _import(args) -> int:
    from critique.base.command import command
    from critique.datasets import hub, preset
    from critique.datasets.columns import Columns
    from critique.datasets.registry import data_dir

    said = shlex.join(command() or [])
    if preset.is_preset(args.source):
        named = [f"--{o.replace('_', '-')}" for o in ("question", "label", "id", "user", "train_split", "test_split",
                                                       "columns") if getattr(args, o) is not None]
        if named:
            raise UserError(f"{args.source}: a preset names its own columns and splits; {', '.join(named)} "
                            f"go with hf: sources")
        dataset = preset.import_preset(args.source, data_dir(args.out), args.local, said, task=args.task,
                                       test_fraction=args.test_fraction, seed=args.seed, order=args.order)
    elif args.local is not None:
        raise UserError(f"--from goes with a preset (preset:NAME[:CONFIG]); for a local file give hf:{args.local}")
    elif hub.is_hub(args.source):
        columns = Columns.from_file(args.columns) if args.columns else Columns()
        columns = columns.given(question=args.question, label=args.label, id=args.id, user=args.user,
                                task=args.task, train_split=args.train_split, test_split=args.test_split,
                                test_fraction=args.test_fraction, seed=args.seed, order=args.order)
        dataset = hub.import_dataset(args.source, data_dir(args.out) / hub.folder_name(args.source), columns,
                                     command=said)
    else:
        raise UserError(f"{args.source!r}: give hf:NAME[:CONFIG], hf:./path or preset:NAME[:CONFIG]")
    space = dataset.card.answer_space
    answers = "/".join(space) if len(space) <= 12 else f"{len(space)} labels ({', '.join(space[:3])}, ...)"
    print(f"imported {dataset.card.source}: {len(dataset.train)} train / {len(dataset.test)} test, answers "
          f"{answers} -> {dataset.path}")
    for line in dataset.card.extra.get("summary") or []:
        print(f"  {line}")
    print(f"use it with --dataset {dataset.card.source}" + (f" --data-dir {args.out}" if args.out else ""))
    return 0


def _download(args) -> int:
    from critique.datasets.download import SOURCES, download
    from critique.datasets.registry import raw_dir

    for name in _names(args.name, SOURCES):
        folder = download(name, raw_dir(args.to), mirror=args.mirror)
        print(f"downloaded {name} -> {folder}; build it with: critique datasets build {name} --raw {folder}")
    return 0
