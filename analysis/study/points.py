"""The study's (model, dataset) points: each strategy's accuracy per model and dataset, the points Table 2 and
the claims test (one study per condition, e.g. per critic; seeds averaged; a strategy or a whole point whose
predictions errored left out), and the gains between two strategies at each point."""

from __future__ import annotations

from dataclasses import dataclass, fields

from critique.analysis.study.cells import Cells, mean, name_key
from critique.base.config import RunConfig
from critique.base.vocab import CONTROLS

Points = dict  # (model, dataset) -> strategy -> accuracy


def points(accuracy: list[dict]) -> Points:
    """Accuracy per (model, dataset) point and strategy, from rows of model, dataset, strategy and
    accuracy (the accuracy cells, or Table 1)."""
    out: Points = {}
    for row in accuracy:
        if row["accuracy"] is not None:
            out.setdefault((row["model"], row["dataset"]), {})[row["strategy"]] = row["accuracy"]
    return out


@dataclass
class Study:
    """One experiment's Table 2 points: the (model, dataset) points of one condition."""
    condition: str  # the settings that tell it from the other experiments read ("" when there is one)
    points: Points
    notes: list[str]  # what was done with its points, each naming the condition
    default: bool  # its settings are RunConfig's defaults (with --critic gold: the paper's)

    def named(self, text: str) -> str:
        """`text` with the condition it is about (nothing to name when the inputs hold one experiment)."""
        return f"{self.condition}: {text}" if self.condition else text


def condition_keys(labels: dict) -> list[str]:
    """The settings in which the plain runs of some model and dataset differ (analysis.reading.read.label_variants),
    seed aside (seeds are averaged), in the order of the settings."""
    groups: dict[tuple, list[dict]] = {}
    for (_, dataset), about in labels.items():
        groups.setdefault((about["model"], dataset), []).append(about["settings"])
    order = list(dict.fromkeys(k for about in labels.values() for k in about["settings"]))
    return [k for k in order if k != "seed"
            and any(len({repr(s.get(k)) for s in members}) > 1 for members in groups.values())]


def conditions(labels: dict) -> dict[tuple, str]:
    """(model as shown, dataset) -> its condition: its values of the `condition_keys`, e.g. "critic=self".
    Every point has its values of every such setting, so a model that ran only the gold critic joins
    another's critic=gold experiment; "" when no setting differs. A control dataset's point is its own
    experiment ("control=positive", critique.base.vocab.CONTROLS), never pooled with the study's datasets."""
    keys = condition_keys(labels)
    apart = [k for k in across_models(labels) if k not in keys]
    shown = {None: "default"}
    out = {}
    for point, about in labels.items():
        settings = about["settings"]
        values = [f"{k}={shown.get(settings.get(k), settings.get(k))}" for k in keys]
        values += [f"{k}={settings.get(k)}" for k in apart if settings.get(k) != _DEFAULTS[k]]
        control = CONTROLS.get(point[1])
        out[point] = ", ".join(values + ([f"control={control}"] if control else []))
    return out


def across_models(labels: dict) -> list[str]:
    """The run settings (RunConfig's fields) in which the plain runs of one dataset differ from one model to
    another: two models asked in two prompt layouts are two experiments, never one sign test. A point names
    such a setting only where it is not the default, so the default runs keep their names."""
    by_dataset: dict[str, list[dict]] = {}
    for (_, dataset), about in labels.items():
        by_dataset.setdefault(dataset, []).append(about["settings"])
    order = list(dict.fromkeys(k for about in labels.values() for k in about["settings"]))
    return [k for k in order if k != "seed" and k in _DEFAULTS
            and any(len({repr(s.get(k)) for s in members}) > 1 for members in by_dataset.values())]


_DEFAULTS = {f.name: f.default for f in fields(RunConfig)}


def _default(settings: dict, keys: list[str]) -> bool:
    return all(k in _DEFAULTS and settings.get(k) == _DEFAULTS[k] for k in keys)


def condition_order(labels: dict) -> list[str]:
    """The conditions of `conditions`, the default settings' first, then by name."""
    keys, first = condition_keys(labels) + across_models(labels), {}
    for point, cond in conditions(labels).items():
        first[cond] = first.get(cond, False) or _default(labels[point]["settings"], keys)
    return sorted(first, key=lambda cond: (not first[cond], name_key(cond)))


def _errored(cells: Cells) -> tuple[list[dict], list[tuple]]:
    """The accuracy rows without an error, and (point, why) for each left out: a whole point whose every
    prediction failed (no answer of the model: never a tie), else each strategy with errors."""
    notes, by_point = [], {}
    for r in cells.accuracy:
        by_point.setdefault((r["model"], r["dataset"]), []).append(r)
    for (model, dataset), rows in by_point.items():
        if all(r.get("errors") and r["errors"] == r["n"] for r in rows):
            notes.append(((model, dataset), f"{model} / {dataset}: left out, all {sum(r['n'] for r in rows)} of its "
                                            "predictions ended in an error (no answer of the model: no gain, no tie; "
                                            "rerun it to retry them)"))
            continue
        notes += [((model, dataset), f"{model} / {dataset} / {r['strategy']}: left out, {r['errors']} of its {r['n']} "
                                     "predictions ended in an error (rerun it to retry them)")
                  for r in rows if r.get("errors")]
    return [r for r in cells.accuracy if not r.get("errors")], notes


def studies(cells: Cells) -> list[Study]:
    """Table 2's and the claims' points, one study per condition (`conditions`: a critic condition, a
    prompt set, ... is its own experiment, never pooled with another), the default settings' first, then
    the one with most points. Within one, one point per model and dataset: plain experiments that differ
    in their seed alone count as one point, the mean over seeds (keyed by the model's own name). A point or
    strategy whose predictions errored is left out (`_errored`); each study's notes say what was done."""
    labels = cells.labels or {}
    condition, keys = conditions(labels), condition_keys(labels) + across_models(labels)
    found: dict[str, Study] = {}

    def study(point) -> Study:
        cond = condition.get(point, "")
        about = labels.get(point) or {"settings": {}}
        return found.setdefault(cond, Study(cond, {}, [], _default(about["settings"], keys)))

    counted, errored = _errored(cells)
    groups: dict[tuple, list] = {}
    for point, accuracy in points(counted).items():
        model = (labels.get(point) or {"model": point[0]})["model"]
        groups.setdefault((study(point).condition, model, point[1]), []).append((point, accuracy))
    for (cond, model, dataset), members in sorted(groups.items(), key=lambda item: tuple(map(name_key, item[0]))):
        mine = found[cond]
        if len(members) == 1:
            mine.points[members[0][0]] = members[0][1]
            continue
        shared = set.intersection(*(set(accuracy) for _, accuracy in members))
        mine.points[(model, dataset)] = {s: mean([accuracy[s] for _, accuracy in members]) for s in shared}
        mine.notes.append(mine.named(f"{model} / {dataset}: one point, the mean over {len(members)} seeds"))
    for point, why in errored:
        study(point).notes.append(study(point).named(why))
    return sorted(found.values(), key=lambda s: (not s.default, -len(s.points), name_key(s.condition)))


def study_points(cells: Cells) -> tuple[Points, list[str]]:
    """The first study's points and notes (`studies`: the default settings', when they were run)."""
    first = next(iter(studies(cells)), None)
    return (first.points, first.notes) if first else ({}, [])


def gains(points_: Points, critique: str, baseline: str) -> dict[tuple, float]:
    """(model, dataset) -> accuracy of `critique` minus accuracy of `baseline` (points), where a point has both."""
    return {point: acc[critique] - acc[baseline] for point, acc in points_.items()
            if critique in acc and baseline in acc}
