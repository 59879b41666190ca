"""Published reference numbers beside ours, never pooled with them: for each dataset among the inputs that a
references file names (critique/datasets/references/<preset>.toml: each number as its source prints it, with the
paper, its table and the row it was read from), Table 1's accuracy of each of our strategies on that dataset, then
the published numbers. Theirs come from other models, prompts, item counts and often other splits: the table
computes nothing across the two (no difference, no test), it puts them where a reader can see both.
"""

from __future__ import annotations

import tomllib
from importlib import resources

from critique.analysis.study.tabular import TITLES, Table, records, skip, sort_strategies

COLUMNS = ["dataset", "from", "model", "method", "accuracy", "items", "source"]
NOTE = ("ours: Table 1's accuracy of each strategy on the dataset (items: its test predictions); published: the "
        "number its source prints (a percentage; items: the test items it was measured on, where the source says), "
        "read from critique/datasets/references/, whose entries each name the table and quote the row. Other "
        "models, prompts and often other splits: never pooled with ours, and no difference between them is tested")
FIELDS = {"dataset": str, "model": str, "method": str, "metric": str, "value": (int, float), "source": str}


def folder():
    """The references files, shipped with the package (package data of critique.datasets)."""
    return resources.files("critique") / "datasets" / "references"


def load(where=None) -> dict[str, list[dict]]:
    """Dataset name (the folder its import writes: banking77, mab-ttl-clinc150, ...) -> its published numbers, from
    every references file; an entry without a field of FIELDS is refused naming its file and entry."""
    found: dict[str, list[dict]] = {}
    place = folder() if where is None else where
    for path in sorted((p for p in place.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name):
        for n, entry in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("reference", [])):
            wrong = [name for name, kind in FIELDS.items() if not isinstance(entry.get(name), kind)]
            if wrong:
                raise ValueError(f"{path}: reference {n + 1}: {', '.join(wrong)} missing or of the wrong type")
            found.setdefault(entry["dataset"], []).append({**entry, "file": path.name})
    return found


def rows(accuracy: list[dict], published: dict[str, list[dict]]) -> list[dict]:
    """Per dataset of ``accuracy`` (Table 1's rows) that ``published`` has numbers for: ours, then theirs."""
    out = []
    for dataset in sorted({r["dataset"] for r in accuracy if r["dataset"] in published}):
        out += [{"dataset": dataset, "from": "ours", "model": r["model"], "method": r["strategy"],
                 "accuracy": r["accuracy"], "items": r["n"], "source": "this study's logs"}
                for r in sort_strategies([r for r in accuracy if r["dataset"] == dataset], ["model", "dataset"])]
        out += [{"dataset": dataset, "from": "published", "model": e["model"], "method": e["method"],
                 "accuracy": e["value"], "items": e.get("items"), "source": e["source"]}
                for e in published[dataset] if e["metric"] == "accuracy"]
    return out


def table(cells, published: dict[str, list[dict]] | None = None) -> Table:
    """The references table (tabular.Table "references")."""
    published = load() if published is None else published
    found = rows(cells.accuracy, published)
    if not found:
        return skip("references", "no dataset among the inputs has published reference numbers "
                                  "(critique/datasets/references/)")
    return Table("references", TITLES["references"], COLUMNS, records(found, COLUMNS), note=NOTE)
