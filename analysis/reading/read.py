"""Find run directories, check their manifests, and read their records.

`start` reads the manifests at once and the JSON-lines logs in worker processes when the
logs are large, while scipy loads in its helper (analysis.stats.core). A run's records come
back counted per (stage, strategy, user) (analysis.reading.tally), cheap to send between processes;
only the runs of an experiment that another run also did come back as records, for
analysis.reading.load to keep the later run's.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from critique.analysis.reading import consistency, count_cache, logs, tally
from critique.base import offline_totals, rundir, vocab
from critique.analysis.reading.run_settings import SETTINGS, settings_of

PREDICTION_FIELDS = ("stage", "strategy", "user", "item_id", "correct", "timeout", "parse_failed",
                     "completion_tokens", "reasoning_tokens", "error", "gold",
                     "context_overflow", "delivered", "prompt_tokens", "answer")  # as analysis.reading.tally reads
# The setting an ablation varies: its experiments differ in it by design.
ABLATED = {"k": "k", "parts": "parts", "train_size": "train_fraction", "gate": "gate"}
# A prediction carries the tokens of the call that answered it, so only the calls without a prediction are read
# from calls.jsonl: the critiques and the summary (Table 5's offline costs), or their totals in the manifest.
CALL_FIELDS = ("stage", "user", "item_id", "completion_tokens", "reasoning_tokens", "error", "request_hash", "model",
               "prompt_tokens")
CALL_STAGES = offline_totals.STAGES
MEMORY_FIELDS = ("assertion_mismatch", "recritique")  # of an episodic entry, or one --on-mismatch drop left out
PARALLEL_BYTES = 32 * 1024 * 1024  # below this, worker processes cost more than they save


def runs_below(folder: Path) -> list[Path]:
    """Run directories anywhere below `folder` (a run's own subfolders are not searched)."""
    found = []
    for here, subfolders, _ in os.walk(folder):
        subfolders.sort()
        if rundir.is_run_dir(here):
            found.append(Path(here))
            subfolders.clear()
    return found


def find_runs(paths: list[str], errors: list[str]) -> list[Path]:
    """Run directories among `paths`; a folder counts as the run directories below it."""
    found = []
    for raw in paths:
        path = Path(raw)
        below = runs_below(path) if path.is_dir() else []
        if below:
            found.extend(below)
        elif path.exists():
            errors.append(f"{path}: not a run directory (no {rundir.MANIFEST}, and no run directory below it); "
                          "left out")
        else:
            errors.append(f"{path}: no such file or directory; left out")
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def run_meta(path: Path, manifest: dict) -> dict:
    """One run's identity, from its manifest (KeyError/TypeError when required fields are missing)."""
    config, dataset = manifest["config"], manifest["dataset"]
    probe = manifest.get("probe") or {}
    ablation = manifest.get("ablation") or {}
    value = ablation.get("value")
    templates = {str(k): str(v) for k, v in (manifest.get("templates") or {}).items()}
    settings = settings_of(manifest)  # what else makes it an experiment (analysis.reading.run_settings)
    local = manifest.get("local_model")
    return {
        "path": str(path),
        "model": str(config["model"]),
        "dataset": str(dataset["name"]),
        "kind": dataset.get("kind") or "single",
        "answer_space": [tally.label(a) for a in dataset.get("answer_space") or []],  # analysis.study.answers' labels
        "n_test": dataset.get("n_test") if isinstance(dataset.get("n_test"), int) else None,
        "probe": probe.get("name"),
        # the probe's other arguments (a consistency probe's repeats and split) tell probes apart
        "probe_args": json.dumps({k: v for k, v in probe.items() if k not in ("name", "attribution")},
                                 sort_keys=True, default=str) if probe else None,
        "attribution": (probe.get("attribution") or "") if probe else None,
        "ablation": ablation.get("name"),
        "ablation_value": json.dumps(value) if isinstance(value, (list, dict)) else value,
        "reasoning_declared": bool(config.get("reasoning_model")),
        "status": manifest.get("status"),
        "started": str(manifest.get("started") or ""), "log_version": manifest.get("log_version"),
        "templates": templates,
        "settings": settings,  # what else defines the experiment (SETTINGS)
        "local_model": local if isinstance(local, dict) else None,  # the embedded model's weights and bounds
        "offline_totals": manifest.get(offline_totals.FIELD),  # its offline calls, as the writer counted them
        "variant": "",  # the settings that tell it from another experiment of its kind (see label_variants)
        # a Learner's fit is not a study run (older Learner folders have no mark: no test split either)
        "learner": manifest.get("learner") is True or (manifest.get("learner") is None and dataset.get("n_test") == 0),
    }


def read_manifests(paths: list[Path], errors: list[str]) -> list[dict]:
    metas = []
    for path in paths:
        try:
            manifest = logs.manifest(path)
            metas.append(run_meta(path, manifest))
        except (OSError, ValueError) as exc:
            errors.append(f"{path}: unreadable {rundir.MANIFEST} ({exc}); left out")
        except (KeyError, TypeError, AttributeError) as exc:
            errors.append(f"{path}: {rundir.MANIFEST} lacks config.model or dataset.name ({exc!r}); left out")
    return metas


def template_group(meta: dict) -> tuple:
    """The runs whose templates must agree: one model and dataset with the same settings (the settings an
    ablation varies aside). Runs that differ in a setting (--prompts compact among paper runs) are other
    experiments, kept apart by label_variants, and may use other templates."""
    ablated = set(ABLATED.values())
    settings = {k: v for k, v in meta["settings"].items() if k not in ablated}
    return meta["model"], meta["dataset"], json.dumps(settings, sort_keys=True, default=str)


def template_conflicts(metas: list[dict]) -> dict[tuple, str]:
    """`template_group` -> why its runs cannot be pooled: one template name with several hashes."""
    seen: dict[tuple, dict[str, dict[str, list[str]]]] = {}
    for meta in metas:
        per_name = seen.setdefault(template_group(meta), {})
        for name, digest in meta["templates"].items():
            per_name.setdefault(name, {}).setdefault(digest, []).append(meta["path"])
    conflicts = {}
    for key, per_name in seen.items():
        clashes = [f"{name}: " + " vs ".join(_runs_with(digest, runs) for digest, runs in hashes.items())
                   for name, hashes in sorted(per_name.items()) if len(hashes) > 1]
        if clashes:
            conflicts[key] = "; ".join(clashes)
    return conflicts


def _runs_with(digest: str, runs: list[str]) -> str:
    more = f" and {len(runs) - 1} more" if len(runs) > 1 else ""
    return f"{digest[:12]} in {runs[0]}{more}"


def select(metas: list[dict], allow_mixed: bool, errors: list[str], problems: list[str],
           keep_learners: bool = False) -> list[dict]:
    """The runs that may be pooled: mixed template hashes are refused unless allowed; a
    Learner's folders are not study runs (unless kept: an export)."""
    learners = [m for m in metas if m["learner"]]
    if learners and not keep_learners:
        shown = ", ".join(m["path"] for m in learners[:3]) + (", ..." if len(learners) > 3 else "")
        problems.append(f"a critique.Learner's folder has no test split, so no table (Learner.evaluate scores it; "
                        f"critique audit reads its memory, critique export its records); left out: {shown}")
        metas = [m for m in metas if not m["learner"]]
    conflicts = template_conflicts(metas)
    for (model, dataset, _), why in sorted(conflicts.items()):
        if allow_mixed:
            problems.append(f"{model} / {dataset}: runs of the same settings use different prompt templates ({why}); "
                            "pooled anyway "
                            "(--allow-mixed)")
        else:
            errors.append(f"{model} / {dataset}: runs of the same settings use different prompt templates ({why}); "
                          "those runs left out (pass --allow-mixed to pool them anyway)")
    kept = metas if allow_mixed else [m for m in metas if template_group(m) not in conflicts]
    for meta in kept:
        if meta["status"] != "complete":
            problems.append(f"{meta['path']}: run status is {meta['status']!r}, not 'complete'; its records so "
                            "far are included")
        if meta["log_version"] != rundir.LOG_VERSION:
            problems.append(f"{meta['path']}: log_version {meta['log_version']!r}, this reader knows "
                            f"{rundir.LOG_VERSION}; read with plain JSON parsing")
    return kept


def memory_counts(path: str, problems: list[str]) -> tuple[int, int]:
    """(critiques, those whose first critique asserted another label than the one shown) of one run (the
    latest run of an experiment holds its memory): its episodic entries and those --on-mismatch drop left
    out (memory/dropped.jsonl); an entry asked again (--on-mismatch recritique) had a first mismatch. A
    critique of a self critic (--critic self: assertion_mismatch null, no label shown) is not counted."""
    rows = []
    try:
        for log in (logs.EPISODIC, logs.DROPPED):
            rows += logs.rows(path, log, MEMORY_FIELDS, problems)
    except OSError as exc:
        problems.append(f"{path}: its episodic memory cannot be read ({exc}); no mismatch rate")
        return 0, 0
    rows = [row for row in rows if row[0] is not None or row[1] is not None]  # shown a label
    return len(rows), sum(row[0] is True or row[1] is not None for row in rows)


def read_records(path: str, plain: bool, shared: bool, with_users: bool, exact: bool, model: str | None = None,
                 n_test: int | None = None, totals=None) -> tuple[dict | list, dict | list, list[str], list[str]]:
    """`count`, or what it counted in the same logs before (analysis.reading.count_cache): tallies only."""
    if shared or exact:
        return count(path, plain, shared, with_users, exact, model, n_test, totals)
    how, logs_before = [plain, with_users, model, n_test, totals], count_cache.identity(path)
    found = count_cache.load(path, how, logs_before)
    if found is None:
        found = count(path, plain, shared, with_users, exact, model, n_test, totals)
        if not found[3]:
            count_cache.store(path, how, logs_before, found)
    return found


def count(path: str, plain: bool, shared: bool, with_users: bool, exact: bool, model: str | None = None,
          n_test: int | None = None, totals=None) -> tuple[dict | list, dict | list, list[str], list[str]]:
    """One run's predictions and calls, the problems met, and the errors (a log that cannot be read at all, or
    records that contradict the manifest: the run is left out).

    Predictions and calls come as tallies (analysis.reading.tally), or, for a run whose experiment another run also
    did (`shared`), as records (predictions by item, call rows), for analysis.reading.load to keep the later run's.
    Within a run a later prediction of an item replaces an earlier one (a rerun after a failed call); only answered
    calls are kept, each request once (a repeated line is counted once). Only what a table uses is counted: calls
    (critiques and summaries), tokens, timeouts and parse failures of plain runs only; users only for preference
    data (others count as the one user ""). The calls are counted by the run's writer while calls.jsonl is as it
    wrote it (the manifest's ``totals``, analysis.reading.consistency.offline), else read. The records are checked
    against the manifest: every call names its ``model``, and no strategy answers more test items than its dataset
    has (``n_test``).
    """
    problems: list[str] = []
    offline = consistency.offline(path, totals) if plain and not (shared or exact) else None
    try:
        predictions = logs.rows(path, logs.PREDICTIONS, PREDICTION_FIELDS, problems, exact)
        read_calls = plain and offline is None
        calls = logs.rows(path, logs.CALLS, CALL_FIELDS, problems, exact, CALL_STAGES) if read_calls else []
    except OSError as exc:
        return {}, {}, problems, [f"{path}: cannot read its logs ({exc}); left out"]
    predictions = tally.latest_per_item(predictions, with_users)
    calls, models = consistency.answered(path, calls, offline, problems)
    contradiction = consistency.contradiction(path, predictions, models, model, n_test)
    if contradiction:
        return {}, {}, problems, [contradiction]
    if shared:
        return predictions, calls, problems, []
    return tally.predictions(predictions, plain), offline.tallies if offline else tally.calls(calls), problems, []


def kind(meta: dict) -> tuple:
    """What an experiment measures: model, dataset, probe and ablation (its settings aside)."""
    return tuple(str(meta[k]) for k in ("model", "dataset", "probe", "attribution", "probe_args", "ablation",
                                        "ablation_value"))


def experiment(meta: dict) -> tuple:
    """Runs with the same experiment key may hold the same records: their kind and settings agree."""
    return (*kind(meta), json.dumps(meta["settings"], sort_keys=True, default=str))


def _shown(name: str, value) -> str:
    return f"{name}={'default' if value is None else value}"


def _what(meta: dict) -> str:
    if meta["probe"] is not None:
        return f"probe {meta['probe']}"
    return f"ablation {meta['ablation']}" if meta["ablation"] is not None else "plain run"


def label_variants(metas: list[dict], problems: list[str]) -> None:
    """Name the settings that differ between the experiments of one model and dataset (plain runs,
    probes, ablations; an ablation's own setting aside): each experiment gets `variant`, e.g.
    "k=1, temperature=0.7", so the tables keep them apart (see `model_label`) and a probe is joined
    only with the plain run of its own settings; a problem says which settings differ."""
    groups: dict[tuple, list[dict]] = {}
    for meta in metas:
        groups.setdefault((meta["model"], meta["dataset"]), []).append(meta)
    for (model, dataset), members in groups.items():
        def values(setting: str) -> set:
            return {json.dumps(m["settings"].get(setting), default=str) for m in members
                    if ABLATED.get(m["ablation"]) != setting}
        differ = [s for s in SETTINGS if len(values(s)) > 1]
        if not differ:
            continue
        shown = {}
        for meta in members:
            own = [s for s in differ if ABLATED.get(meta["ablation"]) != s]
            meta["variant"] = ", ".join(_shown(s, meta["settings"].get(s)) for s in own)
            shown.setdefault(f"{_what(meta)} [{meta['variant']}]", None)
        problems.append(f"{model} / {dataset}: runs with different {', '.join(differ)} are kept apart "
                        f"({'; '.join(shown)}); the model column names each, and only experiments of the same "
                        "settings are compared")


def describe(metas: list[dict]) -> list[dict]:
    """What was read: each experiment with its settings and its run directories (oldest first)."""
    out: dict[tuple, dict] = {}
    for meta in metas:
        found = out.setdefault(experiment(meta), {
            "model": meta["model"], "shown_as": model_label(meta), "dataset": meta["dataset"],
            **{k: meta[k] for k in ("probe", "attribution", "ablation", "ablation_value")},
            "settings": meta["settings"], "local_model": meta.get("local_model"), "runs": []})
        found["runs"].append(meta["path"])
    return list(out.values())


def settings_text(settings: dict) -> str:
    return ", ".join(_shown(k, settings.get(k)) for k in SETTINGS)


def model_label(meta: dict) -> str:
    """The model as the tables show it: with its variant when settings differ (see label_variants)."""
    return f"{meta['model']} [{meta['variant']}]" if meta["variant"] else meta["model"]


def plain(meta: dict) -> bool:
    """An ordinary run: no probe, no ablation."""
    return meta["probe"] is None and meta["ablation"] is None


def shared(metas: list[dict]) -> list[bool]:
    """For each run, whether another run did the same experiment (its records are then read as
    records, not counts: see read_records)."""
    counts = Counter(map(experiment, metas))
    return [counts[experiment(m)] > 1 for m in metas]


def jobs(metas: list[dict]) -> list[tuple]:
    """The arguments of read_records for each run."""
    return [(m["path"], plain(m), repeated, m["kind"] == vocab.PREFERENCE, m["log_version"] != rundir.LOG_VERSION,
             m["model"], m["n_test"], m["offline_totals"]) for m, repeated in zip(metas, shared(metas))]


def _log_bytes(metas: list[dict]) -> int:
    """The bytes of the logs to read: the predictions, and the calls the manifest's totals do not stand for."""
    calls = [m for m in metas if plain(m) and consistency.offline(m["path"], m["offline_totals"]) is None]
    files = [Path(m["path"]) / rundir.PREDICTIONS for m in metas] + [Path(m["path"]) / rundir.CALLS for m in calls]
    return sum(f.stat().st_size for f in files if f.exists())


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class Pending:
    """Runs being read: call `records()` to wait for them."""
    metas: list[dict]
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _done: list | None = None
    _pool: object = None
    _async: object = None

    def records(self) -> list[tuple[dict, dict, list[str], list[str]]]:
        if self._done is None:
            self._done = self._async.get()
            self._pool.close()
            self._pool.join()
        return self._done


def runs(paths: list[str], allow_mixed: bool, errors: list[str], problems: list[str],
         learners: bool = False) -> list[dict]:
    """The runs among `paths` that may be analysed (see `select`), oldest first (a later run's
    records replace an earlier one's), their variants named (see `label_variants`)."""
    metas = select(read_manifests(find_runs(paths, errors), errors), allow_mixed, errors, problems, learners)
    metas.sort(key=lambda m: (m["started"], m["path"]))
    label_variants(metas, problems)
    return metas


def found(paths: list[str], allow_mixed: bool = False) -> tuple[list[dict], list[str], list[str]]:
    """`runs`, with the errors and problems met."""
    errors: list[str] = []
    problems: list[str] = []
    return runs(paths, allow_mixed, errors, problems), errors, problems


def start(paths: list[str], allow_mixed: bool = False, workers: int | None = None,
          found_: tuple | None = None) -> Pending:
    """Read the manifests now (unless `found_` holds what `found` returned for them); read the
    logs now (small, or a machine of one core) or in a worker process per core (large)."""
    metas, errors, problems = found_ if found_ is not None else found(paths, allow_mixed)
    pending = Pending(metas, problems, errors)
    work = jobs(metas)
    if workers is None:  # the scipy helper (analysis.stats.core) loads in 0.2 s of CPU: it needs no core of its own
        workers = usable_cores() if _log_bytes(metas) >= PARALLEL_BYTES else 1
    workers = min(workers, len(work))
    if workers <= 1:
        pending._done = [read_records(*job) for job in work]
        return pending
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pending._pool = context.Pool(workers)
    pending._async = pending._pool.starmap_async(read_records, work, chunksize=1)
    return pending
