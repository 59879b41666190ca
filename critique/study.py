"""`critique study FILE`: a grid of models x datasets, each cell its runs, probes and ablations.

The study file (TOML, read with ``tomllib``) is checked completely before any call: an
unknown field, a model litellm cannot route, an unknown dataset or strategy, a bad value
is one error naming the file and the field. See examples/study.toml for every field.

A cell is one (model, dataset) pair. Its run directories are made in order (the plain run
of the listed strategies, then the probes, then the ablations), so that later ones reuse
the answered requests of earlier ones (``Run.reuse``: the train stage is paid once per
cell). Cells run in parallel with joblib: threads by default; ``--backend loky|dask|ray``
is passed to ``joblib.parallel_config`` for users with several machines (the output
folder must then be shared). A cell whose run directories are all complete is skipped,
and a cell killed at any moment continues where it stopped (the run directory contract).

Concurrency: each cell has at most its model's ``concurrency`` calls in flight, and with
threads all cells of one provider together at most ``[providers] <name> = N``: one
``threading.BoundedSemaphore`` per provider, shared by the cells (threads share memory)
and taken without blocking the event loop, only by calls that reach the LLM layer. Worker
processes (loky, dask, ray) cannot share a semaphore, so there the provider's limit is
split: each cell gets ``N // min(jobs, cells of that provider)`` (at least 1).

Several endpoints serving the same model (several vLLM servers) are declared under
``[[router.model_list]]`` with ``model_name`` = the ``[[models]]`` name; that model's
calls then go through one litellm ``Router`` over those deployments (load-balanced with
``router.routing_strategy``, litellm's default otherwise).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from critique import logs

SETTINGS = {  # top-level field -> (type, what it is)
    "out": (str, "parent folder of the run directories"),
    "datasets": (list, "dataset names or folders"),
    "strategies": (list, "strategies of the plain run of each cell"),
    "limit": (int, "first N train and N test items"),
    "seed": (int, "seed"),
    "k": (int, "retrieved examples"),
    "parts": (str, "critique parts"),
    "max_tokens": (int, "token limit of a reply"),
    "temperature": (float, "temperature"),
    "reasoning_effort": (str, "reasoning effort"),
    "timeout": (float, "seconds per attempt at a call"),
    "retries": (int, "retries of a call after a rate limit, a server error or a timeout"),
    "concurrency": (int, "calls in flight per cell"),
    "encoder": (str, "sentence-transformers model"),
    "data_dir": (str, "where built datasets live"),
    "cache_dir": (str, "response and embedding cache"),
    "use_cache": (bool, "read and write the shared response cache"),
    "jobs": (int, "cells at once"),
    "backend": (str, "joblib backend"),
}
TABLES = ("models", "providers", "probes", "ablations", "router")
MODEL_FIELDS = {"name": str, "api_base": str, "reasoning_effort": str, "max_tokens": int, "temperature": float,
                "concurrency": int, "timeout": float, "retries": int}
PROBE_FIELDS = {"suggestibility": {"attributions", "datasets", "models"},
                "consistency": {"repeats", "split", "datasets", "models"}}
ABLATION_FIELDS = {"values", "datasets", "models"}
ROUTER_FIELDS = {"routing_strategy", "model_list"}
DEPLOYMENT_FIELDS = {"model_name", "litellm_params", "model_info"}
BACKENDS = ("threading", "loky", "dask", "ray")
EFFORTS = ("low", "medium", "high")


def _error(message: str):
    from critique.cli import UserError

    return UserError(message)


@dataclass
class Model:
    name: str
    api_base: str | None = None
    reasoning_effort: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    concurrency: int | None = None
    timeout: float | None = None
    retries: int | None = None
    deployments: list[dict] | None = None  # router deployments (litellm model_list entries)

    @property
    def provider(self) -> str:
        return self.name.split("/", 1)[0]


@dataclass
class Task:
    label: str  # "run", "suggestibility-user", "k-3", ...
    config: object  # RunConfig
    out: Path
    probe: dict | None = None
    ablation: dict | None = None


@dataclass
class Cell:
    index: int
    model: Model
    dataset: str
    checksum: str
    tasks: list[Task] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{Path(self.dataset).name} x {self.model.name}"


@dataclass
class Study:
    path: Path
    out: Path
    models: list[Model]
    datasets: list[str]
    strategies: list[str]
    settings: dict
    jobs: int = 4
    backend: str = "threading"
    providers: dict[str, int] = field(default_factory=dict)
    probes: dict[str, dict] = field(default_factory=dict)
    ablations: dict[str, dict] = field(default_factory=dict)
    routing_strategy: str | None = None


# ---- reading and checking the file --------------------------------------------------------
def _unknown(path: Path, where: str, key: str, known) -> Exception:
    return _error(f"{path}: unknown field {where}{key!r} (known: {', '.join(sorted(known))})")


def _check_table(path: Path, where: str, entry, fields) -> None:
    """``entry`` is a TOML table whose keys are all in ``fields``."""
    if not isinstance(entry, dict):
        raise _error(f"{path}: {where} must be a table")
    for key in entry:
        if key not in fields:
            raise _unknown(path, f"{where}: ", key, fields)


def _typed(path: Path, where: str, value, kind):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if (kind is not bool and isinstance(value, bool)) or not isinstance(value, kind):
        what = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", list: "a list"}
        raise _error(f"{path}: {where} must be {what[kind]}, not {value!r}")
    return value


def _string_list(path: Path, where: str, value) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _error(f"{path}: {where} must be a list of names, not {value!r}")
    return [v.strip() for v in value]


def load(path: str | Path) -> Study:
    """Parse and check the study file (no call, nothing written)."""
    from critique import ablations, probes
    from critique.strategies import DEFAULT, PARTS, parse_strategies

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _error(f"{path}: study file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise _error(f"{path}: not valid TOML ({exc})") from None
    for key in data:
        if key not in SETTINGS and key not in TABLES:
            raise _unknown(path, "", key, list(SETTINGS) + list(TABLES))
    for table in ("providers", "probes", "ablations", "router"):
        if table in data and not isinstance(data[table], dict):
            raise _error(f"{path}: {table} must be a table ([{table}])")
    settings = {k: _typed(path, k, data[k], SETTINGS[k][0]) for k in SETTINGS if k in data}
    here = path.resolve().parent
    rel = lambda p: str(p if Path(p).is_absolute() else here / p)  # noqa: E731  (relative to the file)
    for key in ("data_dir", "cache_dir"):
        if key in settings:
            settings[key] = rel(settings[key])
    out = Path(rel(settings.pop("out", f"runs/{path.stem}")))
    for key, low in (("limit", 1), ("k", 1), ("max_tokens", 1), ("concurrency", 1), ("jobs", 1), ("retries", 0),
                     ("timeout", 0.001)):
        if key in settings and settings[key] < low:
            raise _error(f"{path}: {key} must be at least {low}, not {settings[key]}")
    if settings.get("parts", "full") not in PARTS:
        raise _error(f"{path}: parts must be one of {', '.join(PARTS)}, not {settings['parts']!r}")
    if settings.get("reasoning_effort", "low") not in EFFORTS:
        raise _error(f"{path}: reasoning_effort must be one of {', '.join(EFFORTS)}")
    backend = settings.pop("backend", "threading")
    if backend not in BACKENDS:
        raise _error(f"{path}: backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    jobs = settings.pop("jobs", 4)
    datasets = _string_list(path, "datasets", data.get("datasets", []))
    if not datasets:
        raise _error(f"{path}: datasets: give at least one dataset")
    settings.pop("datasets", None)
    strategies = settings.pop("strategies", list(DEFAULT))
    try:
        strategies = parse_strategies(",".join(_string_list(path, "strategies", strategies))) if strategies else []
    except ValueError as exc:
        raise _error(f"{path}: strategies: {exc}") from None

    raw_models = data.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise _error(f"{path}: give at least one [[models]] table with a name")
    models = []
    for number, entry in enumerate(raw_models, start=1):
        where = f"[[models]] #{number}"
        _check_table(path, where, entry, MODEL_FIELDS)
        if "name" not in entry:
            raise _error(f"{path}: {where} has no name (a litellm model string)")
        values = {k: _typed(path, f"{where}.{k}", v, MODEL_FIELDS[k]) for k, v in entry.items()}
        if values.get("reasoning_effort", "low") not in EFFORTS:
            raise _error(f"{path}: {where}.reasoning_effort must be one of {', '.join(EFFORTS)}")
        for key, low in (("max_tokens", 1), ("concurrency", 1), ("retries", 0), ("timeout", 0.001)):
            if key in values and values[key] < low:
                raise _error(f"{path}: {where}.{key} must be at least {low}, not {values[key]}")
        models.append(Model(**values))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise _error(f"{path}: a model is listed twice in [[models]]")

    providers = {}
    for key, value in (data.get("providers") or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _error(f"{path}: providers.{key} must be a whole number >= 1 (calls in flight), not {value!r}")
        providers[key] = value

    router = data.get("router") or {}
    for key in router:
        if key not in ROUTER_FIELDS:
            raise _unknown(path, "router.", key, ROUTER_FIELDS)
    by_name = {m.name: m for m in models}
    for number, entry in enumerate(router.get("model_list") or [], start=1):
        where = f"[[router.model_list]] #{number}"
        _check_table(path, where, entry, DEPLOYMENT_FIELDS)
        params = entry.get("litellm_params")
        if not isinstance(params, dict) or not isinstance(params.get("model"), str) \
                or not isinstance(params.get("api_base"), str):
            raise _error(f"{path}: {where}.litellm_params needs model and api_base (one endpoint of the model)")
        if entry.get("model_name") not in by_name:
            raise _error(f"{path}: {where}.model_name {entry.get('model_name')!r} is not the name of a [[models]] "
                         f"entry ({', '.join(names)})")
        model = by_name[entry["model_name"]]
        model.deployments = (model.deployments or []) + [entry]
    for model in models:
        if model.deployments and model.api_base:
            raise _error(f"{path}: model {model.name!r} has both api_base and router deployments; keep one")

    probes_ = {}
    for name, spec in (data.get("probes") or {}).items():
        if name not in PROBE_FIELDS:
            raise _unknown(path, "probes.", name, PROBE_FIELDS)
        if not isinstance(spec, dict):
            raise _error(f"{path}: probes.{name} must be a table")
        for key in spec:
            if key not in PROBE_FIELDS[name]:
                raise _unknown(path, f"probes.{name}.", key, PROBE_FIELDS[name])
        checked = _filters(path, f"probes.{name}", spec, datasets, names)
        try:
            if name == "suggestibility":
                checked["attributions"] = list(dict.fromkeys(
                    probes.parse_attribution(a) for a in _string_list(path, "probes.suggestibility.attributions",
                                                                      spec.get("attributions", ["none"]))))
            else:
                repeats = spec.get("repeats", 5)
                if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
                    raise ValueError(f"repeats must be a whole number >= 2, not {repeats!r}")
                split = spec.get("split", "test")
                if split not in probes.SPLITS:
                    raise ValueError(f"split must be test or train, not {split!r}")
                checked.update(repeats=repeats, split=split)
        except ValueError as exc:
            raise _error(f"{path}: probes.{name}: {exc}") from None
        probes_[name] = checked

    ablations_ = {}
    for name, spec in (data.get("ablations") or {}).items():
        if name not in ablations.NAMES:
            raise _unknown(path, "ablations.", name, ablations.NAMES)
        if not isinstance(spec, dict):
            raise _error(f"{path}: ablations.{name} must be a table")
        for key in spec:
            if key not in ABLATION_FIELDS:
                raise _unknown(path, f"ablations.{name}.", key, ABLATION_FIELDS)
        checked = _filters(path, f"ablations.{name}", spec, datasets, names)
        try:
            checked["values"] = ablations.parse_values(name, spec.get("values", ablations.DEFAULT_VALUES[name]))
        except ValueError as exc:
            raise _error(f"{path}: ablations.{name}.values: {exc}") from None
        ablations_[name] = checked

    return Study(path=path, out=out, models=models, datasets=datasets, strategies=strategies, settings=settings,
                 jobs=jobs, backend=backend, providers=providers, probes=probes_, ablations=ablations_,
                 routing_strategy=router.get("routing_strategy"))


def _filters(path: Path, where: str, spec: dict, datasets: list[str], models: list[str]) -> dict:
    """The optional datasets/models a probe or ablation is limited to (each must be in the study)."""
    out = {}
    for key, known in (("datasets", datasets), ("models", models)):
        if key in spec:
            chosen = _string_list(path, f"{where}.{key}", spec[key])
            strange = [c for c in chosen if c not in known]
            if strange:
                raise _error(f"{path}: {where}.{key}: {', '.join(strange)} not among the study's {key}")
            out[key] = chosen
    return out


def check(study: Study) -> dict[str, str]:
    """Every model routable (with its key), every dataset found; returns dataset -> checksum."""
    import litellm

    from critique.datasets.registry import resolve
    from critique.datasets.splits import DatasetError
    from critique.llm import LLMConfig, check_model

    for model in study.models:
        try:
            for deployment in model.deployments or []:
                params = deployment["litellm_params"]
                try:
                    litellm.get_llm_provider(params["model"], api_base=params["api_base"])
                except Exception:
                    raise ValueError(f"litellm cannot route deployment model {params['model']!r}") from None
            check_model(LLMConfig(model=model.name, api_base=_api_base(model)))
        except ValueError as exc:
            raise _error(f"{study.path}: [[models]] {model.name!r}: {exc}") from None
    checksums = {}
    for name in study.datasets:
        try:
            checksums[name] = resolve(name, study.settings.get("data_dir")).checksum
        except DatasetError as exc:
            raise _error(f"{study.path}: datasets: {exc}") from None
    return checksums


def _api_base(model: Model) -> str | None:
    if model.deployments:
        return model.deployments[0]["litellm_params"]["api_base"]
    return model.api_base


# ---- the cells ------------------------------------------------------------------------------
def base_config(study: Study, model: Model, dataset: str):
    from critique.memory.embed import DEFAULT_ENCODER
    from critique.pipeline import RunConfig

    s = study.settings
    pick = lambda key, default: getattr(model, key) if getattr(model, key) is not None else s.get(key, default)  # noqa
    return RunConfig(dataset=dataset, model=model.name, strategies=list(study.strategies), k=s.get("k", 5),
                     parts=s.get("parts", "full"), limit=s.get("limit"), seed=s.get("seed", 0),
                     max_tokens=pick("max_tokens", 8192), temperature=pick("temperature", 0.0),
                     reasoning_effort=pick("reasoning_effort", None), api_base=_api_base(model),
                     concurrency=pick("concurrency", 4), encoder=s.get("encoder", DEFAULT_ENCODER),
                     use_cache=s.get("use_cache", True), data_dir=s.get("data_dir"), cache_dir=s.get("cache_dir"),
                     timeout=pick("timeout", 600.0), num_retries=pick("retries", 5))


def _selected(spec: dict, model: Model, dataset: str) -> bool:
    return dataset in spec.get("datasets", [dataset]) and model.name in spec.get("models", [model.name])


def plan(study: Study, checksums: dict[str, str]) -> list[Cell]:
    from critique import ablations, probes

    cells = []
    for model in study.models:
        for dataset in study.datasets:
            base = base_config(study, model, dataset)
            cell = Cell(len(cells) + 1, model, dataset, checksums[dataset])
            if study.strategies:
                cell.tasks.append(Task("run", base, study.out / ablations.run_name(base)))
            for name, spec in study.probes.items():
                if not _selected(spec, model, dataset):
                    continue
                found = [probes.suggestibility_probe(a) for a in spec["attributions"]] if name == "suggestibility" \
                    else [probes.consistency_probe(spec["repeats"], spec["split"])]
                for probe in found:
                    config = probes.probe_config(base, probe)
                    suffix = probes.probe_suffix(probe)
                    cell.tasks.append(Task(suffix, config, study.out / ablations.run_name(config, suffix),
                                           probe=probe))
            for name, spec in study.ablations.items():
                if not _selected(spec, model, dataset):
                    continue
                for value in spec["values"]:
                    config = ablations.config_for(base, name, value)
                    cell.tasks.append(Task(f"{name}-{ablations.value_label(value)}", config,
                                           ablations.run_dir(study.out, config, name, value),
                                           ablation={"name": name, "value": value}))
            if cell.tasks:
                cells.append(cell)
    for number, cell in enumerate(cells, start=1):
        cell.index = number
    return cells


def task_state(task: Task) -> str:
    """'complete', 'partial' (a run directory exists) or 'new'."""
    path = task.out / logs.MANIFEST
    if not path.exists():
        return "new"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "partial"
    done = manifest.get("status") == "complete" and manifest.get("probe") == task.probe \
        and manifest.get("ablation") == task.ablation \
        and set(task.config.strategies) <= set(manifest.get("config", {}).get("strategies", []))
    return "complete" if done else "partial"


# ---- limits and routing -----------------------------------------------------------------------
class ProviderLimits:
    """At most N calls in flight per provider over all the cells of this process."""

    def __init__(self, limits: dict[str, int]):
        self._slots = {p: threading.BoundedSemaphore(n) for p, n in limits.items()}

    def wrap(self, llm, provider: str) -> None:
        slots = self._slots.get(provider)
        if slots is None:
            return
        inner = llm.complete
        size = int(getattr(llm, "concurrency", None) or llm.config.concurrency)
        mine: list[asyncio.Semaphore] = []  # the cell's own limit, made in the loop that uses it

        async def complete(*args, **kwargs):
            if not mine:
                mine.append(asyncio.Semaphore(max(1, size)))
            async with mine[0]:  # a queued call of this cell holds no provider slot
                delay = 0.002
                while not slots.acquire(blocking=False):
                    await asyncio.sleep(delay)
                    delay = min(0.05, delay * 2)
                try:
                    return await inner(*args, **kwargs)
                finally:
                    slots.release()

        llm.complete = complete


def use_deployments(run, deployments: list[dict], routing_strategy: str | None) -> None:
    """Send the run's calls through one litellm Router over several endpoints of its model."""
    import litellm

    llm = run.llm
    if not hasattr(llm, "_router"):
        raise RuntimeError("critique.llm.LLM has no _router to set; router deployments are not supported")
    model_list = [{"model_name": "critique-model", "litellm_params": dict(d["litellm_params"]),
                   **({"model_info": d["model_info"]} if "model_info" in d else {})} for d in deployments]
    # critique.llm retries each call itself (num_retries=0 per call); the Router only picks the
    # endpoint, and rests one that keeps failing while another can answer.
    options = {"num_retries": 0, "timeout": llm.config.timeout, "disable_cooldowns": len(model_list) < 2}
    if routing_strategy:
        options["routing_strategy"] = routing_strategy
    llm._router = litellm.Router(model_list=model_list, **options)
    run.manifest["deployments"] = [{"model": d["litellm_params"]["model"], "api_base": d["litellm_params"]["api_base"]}
                                   for d in deployments]
    run.manifest["routing_strategy"] = routing_strategy
    logs.write_json_atomic(run.out / logs.MANIFEST, run.manifest)


def split_concurrency(study: Study, cells: list[Cell], jobs: int) -> None:
    """Process backends: each cell gets its share of its provider's limit."""
    for provider, limit in study.providers.items():
        mine = [c for c in cells if c.model.provider == provider]
        if not mine:
            continue
        share = max(1, limit // max(1, min(jobs, len(mine))))
        for cell in mine:
            for task in cell.tasks:
                task.config = replace(task.config, concurrency=min(task.config.concurrency, share))


# ---- running ----------------------------------------------------------------------------------
_PRINT = threading.Lock()


class SharedLoop:
    """One event loop in a thread of its own, for all the cells of this process.

    Cells run in joblib threads, but their coroutines all run on this one loop: litellm
    keeps process-wide async state (its logging worker, client caches) that breaks when
    several event loops run at once in one process.
    """

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="critique-study-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        """Cancel what is left on the loop (litellm's background tasks), then stop and close it."""

        async def cancel_the_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(cancel_the_rest(), self.loop).result(timeout=10)
        except Exception:  # noqa: BLE001  (best effort: the loop is going away)
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


def say(text: str) -> None:
    with _PRINT:
        print(text, flush=True)


def run_cell(cell: Cell, total: int, out: str, routing_strategy: str | None,
             limits: ProviderLimits | None, shared: SharedLoop | None = None) -> dict:
    """Every run directory of one cell, in order. Never raises: a failure is reported."""
    from critique import ablations, probes

    started = time.monotonic()
    head = f"[{cell.index}/{total}] {cell.label}"
    calls, done = 0, []
    try:
        pool = ablations.matching_calls([Path(out)], cell.model.name, cell.checksum)

        def setup(run) -> None:
            if cell.model.deployments:
                use_deployments(run, cell.model.deployments, routing_strategy)
            if limits is not None:
                limits.wrap(run.llm, cell.model.provider)

        for task in cell.tasks:
            if task_state(task) == "complete":
                continue
            if task.probe is not None:
                work = probes.work_for(task.probe)
            elif task.ablation is not None:
                work = ablations.execute
            else:
                work = lambda run: run.execute()  # noqa: E731
            fresh = (task.probe or {}).get("name") == "consistency"
            outcome, logged = ablations.execute_run(task.config, task.out, probe=task.probe, ablation=task.ablation,
                                                    reuse=None if fresh else pool, work=work, setup=setup,
                                                    progress=False, runner=shared.run if shared else asyncio.run)
            if not fresh:
                pool.update({k: v for k, v in logged.items() if k not in pool})
            calls += outcome.calls_made
            done.append(task.label)
            say(f"{head}: {task.label} done ({outcome.calls_made} calls, {outcome.seconds:.1f}s)")
    except Exception as exc:  # noqa: BLE001  (one failed cell does not stop the others)
        from critique.logs import redact

        message = redact(f"{type(exc).__name__}: {exc}")
        say(f"{head}: FAILED after {time.monotonic() - started:.1f}s: {message}")
        return {"cell": cell.index, "label": cell.label, "status": "failed", "calls": calls, "error": message}
    say(f"{head}: complete ({len(done)} run directories written, {calls} calls, "
        f"{time.monotonic() - started:.1f}s)")
    return {"cell": cell.index, "label": cell.label, "status": "done", "calls": calls, "error": None}


def _backend(backend: str, scheduler: str | None):
    """Prepare a cluster backend; returns an object to keep alive (a dask client)."""
    if backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError:
            raise _error("--backend ray needs the package ray (pip install 'ray[default]')") from None
        register_ray()
        if scheduler:
            ray.init(address=scheduler)
        return None
    if backend == "dask":
        try:
            from distributed import Client
        except ImportError:
            raise _error("--backend dask needs the packages dask and distributed") from None
        return Client(scheduler) if scheduler else Client()
    return None


def main(args) -> int:
    import joblib

    study = load(args.file)
    if args.out:
        study.out = Path(args.out)
    jobs = args.jobs or study.jobs
    backend = args.backend or study.backend
    if jobs < 1:
        raise _error(f"--jobs must be at least 1, not {jobs}")
    checksums = check(study)
    cells = plan(study, checksums)
    states = {c.index: [task_state(t) for t in c.tasks] for c in cells}
    todo = [c for c in cells if any(s != "complete" for s in states[c.index])]
    say(f"study {study.path}: {len(cells)} cells ({len(study.models)} models x {len(study.datasets)} datasets), "
        f"{sum(len(c.tasks) for c in cells)} run directories under {study.out}; "
        f"{len(cells) - len(todo)} complete, {len(todo)} to run; backend {backend}, {jobs} at once")
    if args.dry_run:
        for cell in cells:
            say(f"[{cell.index}/{len(cells)}] {cell.label}: "
                + ", ".join(f"{t.label} ({s})" for t, s in zip(cell.tasks, states[cell.index])))
        return 0
    for cell in cells:
        if cell not in todo:
            say(f"[{cell.index}/{len(cells)}] {cell.label}: complete, skipped")
    study.out.mkdir(parents=True, exist_ok=True)
    limits = shared = None
    if backend == "threading":
        limits, shared = ProviderLimits(study.providers), SharedLoop()
    else:
        split_concurrency(study, todo, jobs)
    keep = _backend(backend, args.scheduler)
    results = []
    try:
        with joblib.parallel_config(backend=backend, n_jobs=min(jobs, max(1, len(todo)))):
            for result in joblib.Parallel(return_as="generator_unordered")(
                    joblib.delayed(run_cell)(cell, len(cells), str(study.out), study.routing_strategy, limits,
                                             shared)
                    for cell in todo):
                results.append(result)
    finally:
        if shared is not None:
            shared.close()
        if keep is not None:
            keep.close()
    failed = [r for r in results if r["status"] == "failed"]
    say(f"study: {len(results) - len(failed)} cells done, {len(cells) - len(todo)} skipped, {len(failed)} failed; "
        f"{sum(r['calls'] for r in results)} LLM calls made. Tables: critique tables {study.out}")
    for r in failed:
        say(f"  failed: {r['label']}: {r['error']}")
    return 1 if failed else 0
