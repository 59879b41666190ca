"""Dataset names, where their splits live, and how they are made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from critique.base.paths import data_dir, raw_dir  # noqa: F401  (raw_dir: where the builders read)
from critique.datasets import controls, hub, mcr, mcr_gen, nfcorpus, pref_gen, preference, preset, pubmed
from critique.datasets.splits import CARD, Dataset, DatasetError, load_dataset


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    task: str
    answer_space: tuple[str, ...]
    build: Callable[..., Dataset]  # build(out, seed=..., raw=...) -> Dataset
    generated: bool  # True: needs no raw upstream files
    raw_subdir: str | None = None  # its folder under a raw root (`build all --raw DIR`)


REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> None:
    REGISTRY[spec.name] = spec


register(DatasetSpec(mcr_gen.NAME, "multi-condition ranking (generated)", tuple(mcr_gen.ANSWER_SPACE),
                     mcr_gen.build, generated=True))
register(DatasetSpec(pref_gen.NAME, "preference, hidden rules (generated)", tuple(preference.ANSWER_SPACE),
                     pref_gen.build, generated=True))
register(DatasetSpec(controls.POS, "positive control: copy a shown label", tuple(controls.ANSWER_SPACE),
                     controls.build_positive, generated=True))
register(DatasetSpec(controls.NEG, "negative control: labels at random", tuple(controls.ANSWER_SPACE),
                     controls.build_negative, generated=True))
for _name, _task, _space, _build, _raw in [
    ("mcr", "multi-condition ranking (MCRank)", mcr.ANSWER_SPACE, mcr.build, "mcr"),
    ("pubmed", "biomedical yes/no question (PubMedQA)", pubmed.ANSWER_SPACE, pubmed.build, "pubmed"),
    ("nfcorpus", "directly cited paper (NFCorpus)", nfcorpus.ANSWER_SPACE, nfcorpus.build, "nfcorpus"),
    # the article-disjoint variant, for measuring train/test leakage: reads nfcorpus's raw folder
    (nfcorpus.GROUPED, "directly cited paper, article-disjoint", nfcorpus.ANSWER_SPACE, nfcorpus.build_grouped,
     "nfcorpus"),
    ("steam", "game preference (Steam)", preference.ANSWER_SPACE, preference.steam, "steam"),
    ("book", "book preference (Book-Crossing)", preference.ANSWER_SPACE, preference.book, "book"),
    ("anime", "anime preference (MyAnimeList)", preference.ANSWER_SPACE, preference.anime, "anime"),
    ("movie", "movie preference (MovieLens)", preference.ANSWER_SPACE, preference.movie, "movie"),
]:
    register(DatasetSpec(_name, _task, tuple(_space), _build, generated=False, raw_subdir=_raw))


def resolve(name_or_path: str, data: str | Path | None = None) -> Dataset:
    """A dataset folder, a registered name (generated datasets are built on first use), or hf:NAME[:CONFIG] /
    hf:./path (imported on first use, its columns found by their usual names, and imported again when a local
    source's files change; a folder another source's import holds is refused: critique.datasets.hub), or
    preset:NAME[:CONFIG] (its folder, imported from the hub on first use: critique.datasets.preset)."""
    if hub.is_hub(name_or_path):
        return hub.imported(name_or_path, data_dir(data) / hub.folder_name(name_or_path))
    if preset.is_preset(name_or_path):
        return preset.imported(name_or_path, data_dir(data))
    path = Path(name_or_path)
    if path.is_dir():
        return load_dataset(path)
    spec = REGISTRY.get(name_or_path)
    if spec is None:
        known = ", ".join(sorted(REGISTRY))
        raise DatasetError(f"unknown dataset {name_or_path!r}: not a folder, and not one of {known}")
    built = data_dir(data) / spec.name
    if (built / CARD).exists():
        return load_dataset(built)
    if spec.generated:
        return spec.build(built)
    raise DatasetError(f"dataset {spec.name!r} is not built yet: run `critique datasets build {spec.name} "
                       f"--raw DIR` first (`critique datasets download {spec.raw_subdir}` fetches the raw files)")
