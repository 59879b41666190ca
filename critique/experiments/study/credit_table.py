"""The study file's ``[credit]`` table: credit by deletion (``critique credit``) on each cell's plain run once it
has completed, then, with ``prune``, the memories pruned by that credit scored on held-out questions (``critique
credit --prune``). Its fields are checked when the file is read and against each cell's plan, before any call;
each run directory is the one the command makes beside the plain run, and resumes as the command's does.

Fields: ``strategy`` (default EP_CRIT), ``on`` (train, test or test-half; default train, where the command's
default is test: a study's credit selects nothing on its test questions unless asked), ``cite``, ``null``,
``prune`` (the rules, as ``--prune`` takes them), ``seeds`` (of the random removals), and the ``datasets`` and
``models`` it is limited to."""

from __future__ import annotations

from pathlib import Path

from critique.base import rundir
from critique.base.errors import UserError
from critique.base.vocab import CRITIQUE, EP_CRIT, EP_SEM_CRIT, SUMMARY
from critique.experiments.study.fields import error, filters, typed, unknown
from critique.experiments.study.probe_tables import CELL_FIELDS

KINDS = {"strategy": str, "on": str, "cite": bool, "null": int, "prune": str, "seeds": int}
STEP_CREDIT, STEP_PRUNE = "credit", "prune"  # Task.credit["step"]


def defaults() -> dict:
    from critique.experiments.credit.prune import SEEDS

    return {"strategy": EP_CRIT, "on": "train", "cite": False, "null": 0, "seeds": SEEDS}


def read(path: Path, spec: dict | None, datasets: list[str], models: list[str], strategies: list[str],
         settings: dict) -> dict | None:
    """The checked table (None where the file has none): its fields with their defaults, ``rules`` (parsed
    ``prune``, or None) and its cell filters."""
    from critique.experiments.credit import deletion, prune as credit_prune

    if spec is None:
        return None
    for key in spec:
        if key not in set(KINDS) | CELL_FIELDS:
            raise unknown(path, "credit.", key, set(KINDS) | CELL_FIELDS)
    checked = {**defaults(), **{k: typed(path, f"credit.{k}", v, KINDS[k]) for k, v in spec.items() if k in KINDS}}
    checked.update(filters(path, "credit", spec, datasets, models))
    try:
        deletion.check(checked["strategy"], checked["on"], checked["null"], methods=False)
    except deletion.Refused as exc:
        raise error(f"{path}: credit.{exc.key}: {exc}") from None
    if checked["on"] != "train" and checked["strategy"] not in strategies:
        raise error(f"{path}: credit on {checked['on']} reads the plain run's {checked['strategy']} predictions: add "
                    f"it to strategies, or credit on train")
    unrebuildable = [k for k in ("gate", "inject_budget") if settings.get(k) is not None]
    if unrebuildable or settings.get("retrieval", "nearest") != "nearest":
        raise error(f"{path}: credit rebuilds prompts from the K nearest entries only: leave out "
                    f"{', '.join(unrebuildable) or 'retrieval'} or the [credit] table")
    checked["rules"] = None
    if "prune" in checked:
        try:
            checked["rules"] = credit_prune.checked_rules(checked["prune"], checked["strategy"], checked["on"],
                                                          checked["seeds"])
        except ValueError as exc:
            raise error(f"{path}: credit.prune: {exc}") from None
    return checked


def tasks(spec: dict, source: Path, config, task) -> list:
    """The run directories of the table in one cell (``source``: its plain run, of ``config``; ``task``: the Task
    class): the credit run, then the pruning run where the table prunes. UserError where the plain run writes no
    memory the credit's strategy shows."""
    from critique.engine.methods import needed_stages
    from critique.experiments.credit.deletion import default_out

    needed = CRITIQUE if spec["strategy"] == EP_CRIT else SUMMARY
    if needed not in needed_stages(config):
        raise UserError(f"[credit] of {config.dataset} x {config.model}: the plain run's strategies make no "
                        f"{needed} stage, so it has no memory that {spec['strategy']} shows (add "
                        f"{EP_CRIT if needed == CRITIQUE else EP_SEM_CRIT} to strategies)")
    credit = {key: spec[key] for key in ("strategy", "on", "cite", "null")}
    out = default_out(source, spec["strategy"], spec["on"], spec["cite"])
    found = [task(f"credit-{spec['on']}", config, out,
                  credit={**credit, "step": STEP_CREDIT, "source": source, "prunes": bool(spec["rules"])})]
    if spec["rules"]:
        found.append(task(STEP_PRUNE, config, out.parent / f"{out.name}__prune",
                          credit={**credit, "step": STEP_PRUNE, "source": source, "credit_dir": out,
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


def waiting(task) -> str | None:
    """Why the task cannot run (its plain run, or for pruning its credit run, has not completed; the pruning has no
    held-out question; its run directory holds a run of other settings), or None."""
    from critique.experiments.source_run import SourceRun

    c = task.credit
    if not SourceRun(c["source"]).complete():
        return "not run: the plain run has not completed (rerun the study once it has)"
    if why := _no_held_out(task):  # before the credit run's state: no rerun would help
        return why
    if c["step"] == STEP_PRUNE and not SourceRun(c["credit_dir"]).complete():
        return "not run: the credit run has not completed (rerun the study once it has)"
    return _other_settings(task)


def _no_held_out(task) -> str | None:
    """Why the table's pruning has no held-out question to score (told from the plain run before the credit run's
    calls; a credit run already complete is kept), or None."""
    from critique.experiments.credit.prune import no_held_out
    from critique.experiments.source_run import SourceRun

    c = task.credit
    if c["step"] == STEP_CREDIT and (not c["prunes"] or SourceRun(task.out).complete()):
        return None
    why = no_held_out(c["source"], c["on"])
    return None if why is None else f"not run: prune has {why}; set [credit] on = \"train\", or test on more questions"


def _probe(task) -> dict:
    """The manifest ``probe`` the task's run directory is made with, from the runs it reads as they are now."""
    from critique.experiments.credit.deletion import credit_probe
    from critique.experiments.credit.prune import prune_probe

    c = task.credit
    source_run_id = (_manifest(c["source"]) or {}).get("run_id")
    if c["step"] == STEP_CREDIT:
        return credit_probe(c["strategy"], c["on"], c["cite"], c["null"], c["source"], source_run_id)
    return prune_probe(c["strategy"], c["on"], c["source"], source_run_id, c["credit_dir"],
                       (_manifest(c["credit_dir"]) or {}).get("run_id"))


def _other_settings(task) -> str | None:
    """Why the run directory already at the task's place is not the table's (``null`` changed, or a run it reads
    was made anew), or None: the run would refuse to resume it."""
    manifest = _manifest(task.out)
    if not manifest:
        return None
    there, wanted = manifest.get("probe"), _probe(task)
    if not there:
        return f"not run: {task.out.name} holds a run that is not credit's (its manifest has no probe); move it away"
    if there == wanted:
        return None
    keys = [*wanted, *(key for key in there if key not in wanted)]
    changed = [key for key in keys if there.get(key) != wanted.get(key)]
    said = ", ".join(f"{key} {there.get(key)!r} (now {wanted.get(key)!r})" for key in changed)
    if {"source_run_id", "credit_run_id"} & set(changed):
        advice = "a run it reads was made anew since: move this run directory away to make it anew"
    else:
        advice = "set [credit] as it was, or move this run directory away to make it anew"
    return f"not run: {task.out.name} was made with {said}; {advice}"


def state(task) -> str:
    """'complete', 'partial' (a run directory exists) or 'new': complete when it has completed from the plain run
    (and, for pruning, the credit run) of the ids they have now, with every removal its rules make."""
    from critique.experiments.credit import prune as credit_prune

    c = task.credit
    manifest = _manifest(task.out)
    if manifest is None:
        return "new"
    if manifest.get("status") != "complete" or waiting(task):
        return "partial"
    if c["step"] == STEP_CREDIT:
        return "complete"
    try:
        wanted = credit_prune.removals(c["source"], c["credit_dir"], c["rules"], c["seeds"], manifest["config"]["seed"])
    except UserError:
        return "partial"
    asked = {p.get("strategy", "").partition(credit_prune.SEP)[2] for p in rundir.read_jsonl(
        task.out / rundir.PREDICTIONS)}
    return "complete" if set(wanted) <= asked else "partial"


def execute(task, say, run_options: dict):
    """Run the task's credit or pruning run; returns its outcome (critique.runner.Outcome)."""
    from critique.experiments.credit import deletion, prune as credit_prune

    c = task.credit
    if c["step"] == STEP_CREDIT:
        done = deletion.execute(c["source"], c["strategy"], c["on"], cite=c["cite"], null=c["null"], out=task.out,
                                progress=False, say=say, run_options=run_options)
    else:
        done = credit_prune.execute(c["source"], c["credit_dir"], c["strategy"], c["on"], c["rules"], c["seeds"],
                                    out=task.out, progress=False, say=say, run_options=run_options)
    return done["outcome"]
