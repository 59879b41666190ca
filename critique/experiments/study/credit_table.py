"""The study file's ``[credit]`` table: credit by deletion (``critique credit``) on each cell's plain run once it
is complete, then, with ``prune``, the memories pruned by that credit scored on held-out questions (``critique
credit --prune``). Checked completely before any call; each is a run directory of its own beside the plain run,
named as the command names it, and resumes as the command does.

Fields: ``strategy`` (default EP_CRIT), ``on`` (train, test or test-half; default train), ``cite``, ``null``,
``prune`` (the rules, as ``--prune`` takes them), ``seeds`` (of the random removals, default 3), and the
``datasets`` and ``models`` it is limited to."""

from __future__ import annotations

from pathlib import Path

from critique.base.vocab import EP_CRIT, EP_SEM_CRIT, SEM_CRIT
from critique.experiments.study.fields import error, filters, typed, unknown

FIELDS = {"strategy", "on", "cite", "null", "prune", "seeds", "datasets", "models"}
DEFAULTS = {"strategy": EP_CRIT, "on": "train", "cite": False, "null": 0, "seeds": 3}
KINDS = {"strategy": str, "on": str, "cite": bool, "null": int, "prune": str, "seeds": int}
CREDIT, PRUNE = "credit", "prune"  # Task.credit["step"]
MEMORY_STRATEGIES = (EP_CRIT, SEM_CRIT, EP_SEM_CRIT)  # a plain run with one of them writes memory/


def read(path: Path, spec, datasets: list[str], models: list[str], strategies: list[str]) -> dict | None:
    """The checked table (None where the file has none): its fields with their defaults, ``rules`` (parsed
    ``prune``, or None) and its cell filters."""
    from critique.experiments.credit import prune as credit_prune
    from critique.experiments.credit.deletion import ON, STRATEGIES

    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise error(f"{path}: credit must be a table")
    for key in spec:
        if key not in FIELDS:
            raise unknown(path, "credit.", key, FIELDS)
    checked = {**DEFAULTS, **{k: typed(path, f"credit.{k}", v, KINDS[k]) for k, v in spec.items() if k in KINDS}}
    checked.update(filters(path, "credit", spec, datasets, models))
    if checked["strategy"] not in STRATEGIES:
        raise error(f"{path}: credit.strategy: one of {', '.join(STRATEGIES)}, not {checked['strategy']!r} (a field "
                    "method's notes are credited with `critique credit RUN --strategy METHOD`)")
    if checked["on"] not in ON:
        raise error(f"{path}: credit.on: one of {', '.join(ON)}, not {checked['on']!r}")
    if not set(strategies) & set(MEMORY_STRATEGIES):
        raise error(f"{path}: credit needs a plain run with memory: add one of {', '.join(MEMORY_STRATEGIES)} to "
                    "strategies")
    if checked["on"] != "train" and checked["strategy"] not in strategies:
        raise error(f"{path}: credit on {checked['on']} reads the plain run's {checked['strategy']} predictions: add "
                    f"it to strategies, or credit on train")
    if checked["null"] < 0 or checked["seeds"] < 1:
        raise error(f"{path}: credit: null must be at least 0 and seeds at least 1")
    checked["rules"] = None
    if "prune" in checked:
        try:
            checked["rules"] = credit_prune.checked_rules(checked["prune"], checked["strategy"], checked["on"])
        except ValueError as exc:
            raise error(f"{path}: credit.prune: {exc}") from None
    return checked


def tasks(spec: dict, source: Path, config, task) -> list:
    """The run directories of the table in one cell (``source``: its plain run; ``task``: the Task class): the
    credit run, then the pruning run where the table prunes."""
    from critique.experiments.credit.deletion import default_out

    credit = {key: spec[key] for key in ("strategy", "on", "cite", "null")}
    out = default_out(source, spec["strategy"], spec["on"], spec["cite"])
    found = [task(f"credit-{spec['on']}", config, out, credit={**credit, "step": CREDIT, "source": source})]
    if spec["rules"]:
        found.append(task(PRUNE, config, out.parent / f"{out.name}__prune",
                          credit={**credit, "step": PRUNE, "source": source, "credit_dir": out,
                                  "rules": spec["rules"], "seeds": spec["seeds"]}))
    return found


def _manifest(folder: Path) -> dict | None:
    from critique.experiments.source_run import SourceRun

    run = SourceRun(folder)
    if not run.is_run():
        return None
    try:
        return run.manifest
    except (OSError, ValueError):
        return {}


def state(task) -> str:
    """'complete', 'partial' (a run directory exists) or 'new': complete when it ended and was made from the
    source run (and, for pruning, the credit run) as they are now, with every rule's predictions."""
    from critique.experiments.credit import prune as credit_prune
    from critique.experiments.credit.deletion import credit_probe

    c = task.credit
    manifest = _manifest(task.out)
    if manifest is None:
        return "new"
    source = _manifest(c["source"]) or {}
    if manifest.get("status") != "complete" or not source:
        return "partial"
    probe = manifest.get("probe") or {}
    if c["step"] == CREDIT:
        made = probe == credit_probe(c["strategy"], c["on"], c["cite"], c["null"], c["source"], source["run_id"])
        return "complete" if made else "partial"
    credit = _manifest(c["credit_dir"]) or {}
    if probe.get("source_run_id") != source["run_id"] or probe.get("credit_run_id") != credit.get("run_id"):
        return "partial"
    from critique.base import rundir

    asked = {p.get("strategy", "").partition(credit_prune.SEP)[2] for p in rundir.read_jsonl(
        task.out / rundir.PREDICTIONS)}
    return "complete" if set(credit_prune.rule_labels(c["rules"])) <= asked else "partial"


def execute(task, say, run_options: dict):
    """Run the task's credit or pruning run; returns its outcome (critique.runner.Outcome)."""
    from critique.experiments.credit import deletion, prune as credit_prune

    c = task.credit
    if c["step"] == CREDIT:
        done = deletion.execute(c["source"], c["strategy"], c["on"], cite=c["cite"], null=c["null"], out=task.out,
                                progress=False, say=say, run_options=run_options)
    else:
        done = credit_prune.execute(c["source"], c["credit_dir"], c["strategy"], c["on"], c["rules"], c["seeds"],
                                    out=task.out, progress=False, say=say, run_options=run_options)
    return done["outcome"]
