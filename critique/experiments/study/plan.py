"""The cells of a study: one (model, dataset) pair each, with its run directories in order
(the plain run of the listed strategies, then the probes, then the ablations, then the credit
of the plain run's memory), so that later ones reuse the answered requests of earlier ones
(the train stage is paid once per cell)."""

from __future__ import annotations

from dataclasses import asdict, replace

from critique.base import rundir
from critique.base.config import IDENTITY, RunConfig, manifest_value
from critique.experiments import ablations, probes
from critique.experiments.stream import spec as stream_spec
from critique.experiments.study import credit_table
from critique.experiments.study.file import Cell, Model, Study, Task, _api_base
from critique.runner import run_name
from critique.experiments.source_run import SourceRun

# ---- the cells ------------------------------------------------------------------------------
def base_config(study: Study, model: Model, dataset: str) -> RunConfig:
    """The plain run of a cell: the model's own settings, else the file's, else RunConfig's defaults."""
    s = study.settings
    pick = lambda key, field: getattr(model, key) if getattr(model, key) is not None \
        else s.get(key, getattr(RunConfig, field))  # noqa: E731
    return RunConfig(dataset=dataset, model=model.name, strategies=list(study.strategies),
                     k=s.get("k", RunConfig.k), parts=s.get("parts", RunConfig.parts), limit=s.get("limit"),
                     seed=s.get("seed", RunConfig.seed), max_tokens=pick("max_tokens", "max_tokens"),
                     temperature=pick("temperature", "temperature"),
                     reasoning_effort=pick("reasoning_effort", "reasoning_effort"), api_base=_api_base(model),
                     concurrency=pick("concurrency", "concurrency"), encoder=s.get("encoder", RunConfig.encoder),
                     use_cache=s.get("use_cache", RunConfig.use_cache), data_dir=s.get("data_dir"),
                     cache_size_gb=s.get("cache_size_gb", RunConfig.cache_size_gb),
                     cache_dir=s.get("cache_dir"), timeout=pick("timeout", "timeout"),
                     num_retries=pick("retries", "num_retries"), context_tokens=model.context_tokens,
                     prompts=s.get("prompts", RunConfig.prompts),
                     example_order=s.get("example_order", RunConfig.example_order),
                     answer_by=s.get("answer_by", RunConfig.answer_by),
                     on_mismatch=s.get("on_mismatch", RunConfig.on_mismatch), gate=s.get("gate", RunConfig.gate),
                     admission=s.get("admission", RunConfig.admission),
                     inject_budget=s.get("inject_budget", RunConfig.inject_budget),
                     retrieval=s.get("retrieval", RunConfig.retrieval),
                     advice_sources=s.get("advice_sources", RunConfig.advice_sources),
                     critic=s.get("critic", RunConfig.critic), label_budget=s.get("label_budget"),
                     train_budget=s.get("train_budget"), method_settings=s.get("method_settings"),
                     price=model.price,
                     response_format=model.response_format or RunConfig.response_format)


def _selected(spec: dict, model: Model, dataset: str) -> bool:
    return dataset in spec.get("datasets", [dataset]) and model.name in spec.get("models", [model.name])


def _values(base, name: str, spec: dict) -> list[tuple]:
    """(value, how it was chosen) of each run of an ablation: its given values, or gate thresholds chosen from
    the train split of the cell's dataset by ``quantiles``."""
    if "quantiles" in spec:
        return [(c["value"], c["chosen"]) for c in ablations.gate_from_train(base, spec["quantiles"])]
    return [(value, None) for value in spec["values"]]


def _probe_tasks(study: Study, base: RunConfig, found: list[dict]) -> list[Task]:
    """The run directories of one probe table's probes in one cell. A stream's random control takes the budget of
    the verifier arm before it (``budget_from``): until that arm has finished it is named with N for its count."""
    tasks: list[Task] = []
    for probe in found:
        config = probes.probe_config(base, probe)
        budget_from = tasks[-1].out if probe.get("demote") == stream_spec.RANDOM else None
        suffix = probes.probe_suffix({**probe, "demote_count": "N"} if budget_from else probe)
        tasks.append(Task(suffix, config, study.out / run_name(config, suffix), probe=probe, budget_from=budget_from))
    return tasks


def resolved(task: Task) -> Task:
    """A stream's random control whose verifier arm has finished: with that arm's budget (the number of notes it
    demoted) and the run directory named by it. Any other task as it is (a random control whose verifier arm has
    not finished keeps ``budget_from``: it cannot run yet)."""
    if task.budget_from is None or not SourceRun(task.budget_from).complete():
        return task
    probe = {**task.probe, "demote_count": stream_spec.demoted(task.budget_from)}
    suffix = probes.probe_suffix(probe)
    return replace(task, label=suffix, out=task.out.parent / run_name(task.config, suffix), probe=probe,
                   budget_from=None)


def blocked(task: Task) -> str | None:
    """Why a (resolved) task cannot run yet, or None: a stream's random control whose verifier arm has not
    finished, a credit run whose plain run has not completed, a pruning run whose credit run has not."""
    if task.budget_from is not None:
        return "not run: the verifier arm whose budget it takes did not finish"
    return credit_table.waiting(task) if task.credit is not None else None


def plan(study: Study, checksums: dict[str, str]) -> list[Cell]:
    cells = []
    for model in study.models:
        for dataset in study.datasets:
            base = base_config(study, model, dataset)
            cell = Cell(len(cells) + 1, model, dataset, checksums[dataset])
            if study.strategies:
                cell.tasks.append(Task("run", base, study.out / run_name(base)))
            for spec in study.probes.values():
                if _selected(spec, model, dataset):
                    cell.tasks += _probe_tasks(study, base, spec["probes"])
            for name, spec in study.ablations.items():
                if not _selected(spec, model, dataset):
                    continue
                for value, chosen in _values(base, name, spec):
                    config = ablations.config_for(base, name, value)
                    cell.tasks.append(Task(f"{name}-{ablations.value_label(value)}", config,
                                           ablations.run_dir(study.out, config, name, value),
                                           ablation=ablations.ablation_of(name, value, chosen)))
            if study.strategies and study.credit and _selected(study.credit, model, dataset):
                cell.tasks += credit_table.tasks(study.credit, cell.tasks[0].out, base, Task)
            if cell.tasks:
                cells.append(cell)
    for number, cell in enumerate(cells, start=1):
        cell.index = number
    return cells


def same_versions(manifest: dict, strategies: list[str]) -> bool:
    """Each of ``strategies`` was made by the version of its method this code has (a manifest without
    ``method_versions``: every one at version 1)."""
    from critique.engine.methods import method, version

    made = manifest.get("method_versions") or {}
    return all(made.get(name, 1) == version(method(name)) for name in strategies)


def task_state(task: Task) -> str:
    """'complete', 'partial' (a run directory exists) or 'new'."""
    if task.credit is not None:
        return credit_table.state(task)
    run = SourceRun(task.out)
    if not run.is_run():
        return "new"
    try:
        manifest = run.manifest
    except (OSError, ValueError):
        return "partial"
    config = manifest.get("config", {})
    mine = asdict(task.config)
    done = manifest.get("status") == "complete" and manifest.get("probe") == rundir.probe_identity(task.probe) \
        and manifest.get("ablation") == task.ablation \
        and set(task.config.strategies) <= set(config.get("strategies", [])) \
        and all(manifest_value(config, key) == mine.get(key) for key in IDENTITY) \
        and same_versions(manifest, task.config.strategies)
    return "complete" if done else "partial"  # other settings: running it says which (critique.engine.pipeline)
