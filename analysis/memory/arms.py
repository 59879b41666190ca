"""What the tables of the probes that ask each test item in several arms share (conditioning, priors, dose, overturn;
admission's runs against their twins): the predictions by arm, an arm against another on the same items, the
means and shares of a field, and the table of every such run among the inputs (`critique tables`) or of one run
(what its command prints)."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.stats.core import detectable_effect, sign_test
from critique.analysis.study.tabular import Table


class ProbeRun:
    """One run of a probe: its model, dataset, whether its rates are per user (preference data), and its
    predictions by arm (``by``: arm -> (user, item id) -> record)."""

    def __init__(self, manifest: dict, by: dict[str, dict]):
        self.model = (manifest.get("config") or {}).get("model")
        self.dataset = (manifest.get("dataset") or {}).get("name")
        self.preference = (manifest.get("dataset") or {}).get("kind") == "preference"
        self.by = by

    def row(self, arm: str) -> dict:
        """The first columns of an arm's row."""
        return {"model": self.model, "dataset": self.dataset, "arm": arm}


def probe_run(path: Path, probe: str, stage: str, problems: list[str]) -> ProbeRun | None:
    """The run at ``path`` when it is a run of ``probe`` (None otherwise, or when its manifest cannot be read:
    ``problems`` says so), with its predictions of ``stage`` by arm."""
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no {probe} rows")
        return None
    if ((manifest.get("probe") or {}).get("name")) != probe:
        return None
    return ProbeRun(manifest, by_arm(path, stage, problems))


def by_arm(path: Path, stage: str, problems: list[str]) -> dict[str, dict]:
    """The run's latest predictions of ``stage``: arm (strategy) -> (user, item id) -> record."""
    by: dict[str, dict] = {}
    for r in logs.predictions(path, (stage,), problems):
        by.setdefault(r.get("strategy"), {})[(r.get("user"), r.get("item_id"))] = r
    return by


def against(mine: dict, other: dict, name: str) -> dict:
    """``mine`` against ``other`` on the items both answered: ``name`` (the difference in points), ``wins`` and
    ``losses`` (items right only in ``mine``, only in ``other``), ``p`` (exact McNemar: the sign test on those
    items) and ``mde`` (the minimum detectable effect)."""
    both = [key for key in mine if key in other]
    wins = sum(mine[k].get("correct") is True and other[k].get("correct") is not True for k in both)
    losses = sum(mine[k].get("correct") is not True and other[k].get("correct") is True for k in both)
    return {name: 100.0 * (wins - losses) / len(both) if both else None, "wins": wins, "losses": losses,
            "p": sign_test(wins, losses), "mde": detectable_effect(len(both), wins + losses)}


def against_none(rows: list[dict], by: dict[str, dict], none: str = "none") -> list[dict]:
    """``rows`` (one per arm, ``none`` among them) with each other arm against ``none`` (``against``: vs_none,
    wins, losses, p, mde) and ``p_holm``, Holm over the arms' p."""
    from critique.analysis.stats.core import holm

    for row in rows:
        if row["arm"] != none:
            row.update(against(by[row["arm"]], by.get(none, {}), "vs_none"))
    for row, p_holm in zip(rows, holm([row.get("p") for row in rows])):
        row["p_holm"] = p_holm
    return rows


def mean(values: list) -> float | None:
    """The mean of the numbers among ``values`` (None: none)."""
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(values) / len(values) if values else None


def share(records: list[dict], field: str) -> float | None:
    """The share (%) of records whose ``field`` is true, over those where it is true or false."""
    known = [r for r in records if isinstance(r.get(field), bool)]
    return 100.0 * sum(r[field] for r in known) / len(known) if known else None


def arm_order(arm: str) -> tuple:
    """``none`` first, then KIND@N by kind and N."""
    if "@" not in arm:
        return (0, arm, 0)
    kind, n = arm.split("@", 1)
    return (1, kind, int(n)) if n.isdigit() else (1, kind, 0)


class ProbeTable:
    """One probe's table: its key, title, columns and note, and ``rows(path, problems)``, a run's rows."""

    def __init__(self, probe: str, key: str, title: str, columns: list[str], note: str, rows):
        self.probe, self.key, self.title, self.columns, self.note, self.rows = probe, key, title, columns, note, rows

    def table(self, metas: list[dict], problems: list[str]) -> Table:
        """The table of this probe's runs among the runs read (`critique tables`)."""
        rows = [row for m in metas if m.get("probe") == self.probe for row in self.rows(Path(m["path"]), problems)]
        if not rows:
            return Table(self.key, self.title, skipped=f"no {self.probe} probe among the inputs (critique probe "
                                                       f"{self.probe})")
        return Table(self.key, self.title, self.columns, rows, note=self.note)

    def text(self, path: Path, empty: str = "no arm answered") -> str:
        """One run's rows as markdown (what its command prints)."""
        from critique.analysis.study.render import markdown_table

        problems: list[str] = []
        rows = self.rows(Path(path), problems)
        if not rows:
            return f"no {self.probe} numbers: " + "; ".join(problems or [empty])
        table = Table(self.key, self.title, self.columns, rows, note=self.note)
        return "\n".join([f"\n{self.title}\n", markdown_table(table), "", f"_{self.note}._", *problems])
