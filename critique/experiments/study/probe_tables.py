"""The study file's ``[probes.*]`` tables (critique.experiments.study.file): suggestibility, consistency,
conditioning, priors, dose and stream, each checked completely before any call and read into the probes
(manifest ``probe``) it asks of each cell it is limited to."""

from __future__ import annotations

from pathlib import Path

from critique.base.errors import UserError
from critique.experiments import probes
from critique.experiments.stream import spec as stream_spec
from critique.experiments.study.fields import error, filters, string_list, unknown

CELL_FIELDS = {"datasets", "models"}  # the cells a probe is limited to
FIELDS = {"suggestibility": {"attributions"} | CELL_FIELDS,
          "consistency": {"repeats", "split"} | CELL_FIELDS,
          "conditioning": {"lengths"} | CELL_FIELDS,
          "priors": set(CELL_FIELDS),
          "dose": {"values", "irrelevant"} | CELL_FIELDS,
          "stream": {"feedback", "arms", "order", "start", "conflicts", "rank", "conflict_similarity",
                     "refresh_every", "disable_test"} | CELL_FIELDS}


def read(path: Path, tables: dict, datasets: list[str], models: list[str]) -> dict[str, dict]:
    """name -> the checked table: its cell filters and ``probes``, the list of probes it runs in each cell
    (in order: a stream's random control comes after the verifier arm whose budget it takes)."""
    read_ = {}
    for name, spec in tables.items():
        if name not in FIELDS:
            raise unknown(path, "probes.", name, FIELDS)
        if not isinstance(spec, dict):
            raise error(f"{path}: probes.{name} must be a table")
        for key in spec:
            if key not in FIELDS[name]:
                raise unknown(path, f"probes.{name}.", key, FIELDS[name])
        checked = filters(path, f"probes.{name}", spec, datasets, models)
        try:
            checked["probes"] = {"suggestibility": _suggestibility, "consistency": _consistency,
                                 "conditioning": _conditioning, "priors": _priors, "dose": _dose,
                                 "stream": _stream}[name](path, spec)
        except (ValueError, UserError) as exc:
            raise error(f"{path}: probes.{name}: {exc}") from None
        read_[name] = checked
    return read_


def _suggestibility(path: Path, spec: dict) -> list[dict]:
    attributions = string_list(path, "probes.suggestibility.attributions", spec.get("attributions", ["none"]))
    return [probes.suggestibility_probe(a) for a in dict.fromkeys(map(probes.parse_attribution, attributions))]


def _consistency(path: Path, spec: dict) -> list[dict]:
    repeats = spec.get("repeats", 5)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise ValueError(f"repeats must be a whole number >= 2, not {repeats!r}")
    split = spec.get("split", "test")
    if split not in probes.SPLITS:
        raise ValueError(f"split must be test or train, not {split!r}")
    return [probes.consistency_probe(repeats, split)]


def _conditioning(path: Path, spec: dict) -> list[dict]:
    from critique.experiments import conditioning

    return [conditioning.conditioning_probe(spec.get("lengths", list(conditioning.LENGTHS)))]


def _priors(path: Path, spec: dict) -> list[dict]:
    from critique.experiments import priors

    return [priors.priors_probe()]


def _dose(path: Path, spec: dict) -> list[dict]:
    """``values`` (the K values) and ``irrelevant`` (a run directory, relative to the study file)."""
    from critique.experiments import dose

    irrelevant = spec.get("irrelevant")
    if irrelevant is not None:
        irrelevant = Path(irrelevant) if Path(irrelevant).is_absolute() else path.resolve().parent / irrelevant
    return [dose.dose_probe(spec.get("values", list(dose.VALUES)), irrelevant)]


def _stream(path: Path, spec: dict) -> list[dict]:
    """``feedback`` (one mode or a list: one stream each) or ``arms = true`` (the arms of one comparison, as
    ``critique stream --arms``), with the stream options of ``critique stream``."""
    options = {"order": _whole(spec, "order", 0), "conflicts": spec.get("conflicts", "append"),
               "rank": spec.get("rank", "similarity"),
               "conflict_similarity": _number(spec, "conflict_similarity", stream_spec.CONFLICT_SIMILARITY)}
    arms = spec.get("arms", False)
    if not isinstance(arms, bool):
        raise ValueError(f"arms must be true or false, not {arms!r}")
    if arms == ("feedback" in spec):
        raise ValueError("give feedback (a mode or a list of them: one stream each) or arms = true")
    if arms:
        given = sorted({"start", "refresh_every", "disable_test"} & set(spec))
        if given:
            raise ValueError(f"arms = true sets the arms itself: {', '.join(given)} belong to streams given by "
                             "feedback")
        return [probe for _, probe in stream_spec.arm_probes(**options)]
    refresh = spec.get("refresh_every")
    disable = spec.get("disable_test", False)
    if refresh is not None:
        refresh = _whole(spec, "refresh_every", None)
    if not isinstance(disable, bool):
        raise ValueError(f"disable_test must be true or false, not {disable!r}")
    return [stream_spec.stream_probe(feedback, start=spec.get("start", "train"), disable=disable,
                                     refresh_every=refresh, **options)
            for feedback in dict.fromkeys(string_list(path, "probes.stream.feedback", spec["feedback"]))]


def _whole(spec: dict, key: str, default):
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be a whole number, not {value!r}")
    return value


def _number(spec: dict, key: str, default: float) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key} must be a number, not {value!r}")
    return float(value)
