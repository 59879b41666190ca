"""The study's (model, dataset) points: each strategy's accuracy per model and dataset, the points Table 2 and
the claims test (one per experiment, seeds averaged, a strategy whose predictions errored left out), and the
gains between two strategies at each point."""

from __future__ import annotations

from critique.analysis.cells import Cells, mean, name_key

Points = dict  # (model, dataset) -> strategy -> accuracy


def points(accuracy: list[dict]) -> Points:
    """Accuracy per (model, dataset) point and strategy, from rows of model, dataset, strategy and
    accuracy (the accuracy cells, or Table 1)."""
    out: Points = {}
    for row in accuracy:
        if row["accuracy"] is not None:
            out.setdefault((row["model"], row["dataset"]), {})[row["strategy"]] = row["accuracy"]
    return out


def study_points(cells: Cells) -> tuple[Points, list[str]]:
    """Table 2's and the claims' points: one per model and dataset. Several plain experiments of one
    model and dataset (analysis.read.label_variants) that differ in their seed alone count as one
    point, the mean over seeds (keyed by the model's own name); differing in anything else, they
    are left out, since the tests assume independent points. Also says what it did."""
    groups: dict[tuple, list] = {}
    errored = [r for r in cells.accuracy if r.get("errors")]  # their accuracy is not the model's: no point
    notes = [f"{r['model']} / {r['dataset']} / {r['strategy']}: left out, {r['errors']} of its {r['n']} predictions "
             "ended in an error (rerun it to retry them)" for r in errored]
    counted = [r for r in cells.accuracy if not r.get("errors")]
    for (label, dataset), accuracy in points(counted).items():
        about = cells.labels.get((label, dataset)) or {"model": label, "settings": {}}
        groups.setdefault((about["model"], dataset), []).append((label, accuracy, about["settings"]))
    out: Points = {}
    for (model, dataset), members in sorted(groups.items(), key=lambda item: tuple(map(name_key, item[0]))):
        if len(members) == 1:
            out[(members[0][0], dataset)] = members[0][1]
            continue
        keys = sorted({k for _, _, settings in members for k in settings})
        differ = [k for k in keys if len({repr(settings.get(k)) for _, _, settings in members}) > 1]
        if differ == ["seed"]:
            shared = set.intersection(*(set(accuracy) for _, accuracy, _ in members))
            out[(model, dataset)] = {s: mean([accuracy[s] for _, accuracy, _ in members]) for s in shared}
            notes.append(f"{model} / {dataset}: one point, the mean over {len(members)} seeds")
        else:
            notes.append(f"{model} / {dataset}: left out, its {len(members)} experiments differ in "
                         f"{', '.join(differ)} (one experiment per model and dataset, or seeds alone)")
    return out, notes


def gains(points_: Points, critique: str, baseline: str) -> dict[tuple, float]:
    """(model, dataset) -> accuracy of `critique` minus accuracy of `baseline` (points), where a point has both."""
    return {point: acc[critique] - acc[baseline] for point, acc in points_.items()
            if critique in acc and baseline in acc}
