"""The study file (TOML, read with ``tomllib``): parsed and checked completely before any
call. An unknown field, a model litellm cannot route, an unknown dataset or strategy, a bad
value is one error naming the file and the field. See examples/study.toml for every field."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from critique.base.config import canonical_critic, setting_problem
from critique.base.rundir import add_param_secrets, add_url_secrets
from critique.experiments.study.fields import check_table, error, filters, string_list, typed, unknown
from critique.experiments import ablations
from critique.experiments.study import credit_table, probe_tables

SETTINGS = {  # top-level field -> (type, what it is)
    "out": (str, "parent folder of the run directories"),
    "datasets": (list, "dataset names or folders"),
    "strategies": (list, "strategies of the plain run of each cell"),
    "limit": (int, "first N train and N test items"),
    "seed": (int, "seed"),
    "k": (int, "retrieved examples"),
    "parts": (str, "critique parts"),
    "prompts": (str, "prompt set"),
    "example_order": (str, "where an EP prompt puts its nearest example: nearest-first or nearest-last"),
    "answer_by": (str, "how an answer is read: generate, loglikelihood or calibrated"),
    "gate": (float, "least similarity of a retrieved entry that enters a prompt"),
    "inject_budget": (int, "most tokens of episodic examples per prompt"),
    "retrieval": (str, "nearest or contrast"),
    "advice_sources": (str, "chunk or cited"),
    "on_mismatch": (str, "what enters memory when a critique's assertion does not name the label the critic was "
                         "shown (the gold one, or a flipped one with critic noisy:R)"),
    "admission": (str, "which critiques may enter memory: all, or instruction (only those that carry one)"),
    "critic": (str, "what the critic sees of each train label: gold, noisy:R or self"),
    "label_budget": (float, "with critic self: the nested fraction of train items whose gold label the critic sees"),
    "train_budget": (int, "tokens each memory method's own offline stage may spend"),
    "method_settings": (str, "METHOD.KEY=VALUE,...: settings memory methods declare of their own"),
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
    "cache_size_gb": (float, "the response cache's size limit in GB"),
    "max_cost": (float, "dollars the whole study may spend, over every cell: no call that could pass it is made"),
    "jobs": (int, "cells at once"),
    "backend": (str, "joblib backend"),
}
FIELD_OF = {"retries": "num_retries"}  # study file name -> RunConfig field, where they differ
MODEL_FIELD_OF = {**FIELD_OF, "name": "model"}
TABLES = ("models", "providers", "probes", "ablations", "credit", "router")
MODEL_FIELDS = {"name": str, "api_base": str, "reasoning_effort": str, "max_tokens": int, "temperature": float,
                "concurrency": int, "timeout": float, "retries": int, "context_tokens": int, "price": str,
                "response_format": str}
ABLATION_FIELDS = {"values", "quantiles", "datasets", "models"}  # quantiles: the gate's, from train
ROUTER_FIELDS = {"routing_strategy", "model_list"}
DEPLOYMENT_FIELDS = {"model_name", "litellm_params", "model_info"}
# What a deployment's litellm_params may set: where and how to reach the endpoint, never how it samples (a
# sampling setting there would reach the provider without being in the manifest or the request hash).
CONNECTION_PARAMS = {"model", "api_base", "api_key", "api_version", "organization", "rpm", "tpm",
                     "max_parallel_requests", "aws_region_name", "aws_access_key_id", "aws_secret_access_key",
                     "vertex_project", "vertex_location", "vertex_credentials"}
BACKENDS = ("threading", "loky", "dask", "ray")



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
    context_tokens: int | None = None  # the model's context window (a served model litellm does not know)
    price: str | None = None  # "IN,OUT" dollars per million tokens (a model litellm's price table lacks)
    response_format: str | None = None  # how its requests ask for JSON (critique.llm.formats; None: auto)
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
    budget_from: Path | None = None  # a stream's random control: the verifier arm whose budget it takes
    credit: dict | None = None  # a credit or pruning run of the cell's plain run (study.credit_table)


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
    credit: dict | None = None  # the [credit] table, checked (study.credit_table.read)
    routing_strategy: str | None = None


# ---- reading and checking the file --------------------------------------------------------
def load(path: str | Path) -> Study:
    """Parse and check the study file (no call, nothing written)."""
    from critique.engine.methods import load_installed, parse_strategies
    from critique.engine.strategies import DEFAULT

    load_installed()  # the memory methods beside the five, before any setting names one
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark is not part of the TOML
    except FileNotFoundError:
        raise error(f"{path}: study file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None
    for key in data:
        if key not in SETTINGS and key not in TABLES:
            raise unknown(path, "", key, list(SETTINGS) + list(TABLES))
    for table in ("providers", "probes", "ablations", "credit", "router"):
        if table in data and not isinstance(data[table], dict):
            raise error(f"{path}: {table} must be a table ([{table}])")
    settings = {k: typed(path, k, data[k], SETTINGS[k][0]) for k in SETTINGS if k in data}
    here = path.resolve().parent
    rel = lambda p: str(p if Path(p).is_absolute() else here / p)  # noqa: E731  (relative to the file)
    for key in ("data_dir", "cache_dir"):
        if key in settings:
            settings[key] = rel(settings[key])
    if not settings.get("out", "-").strip():
        raise error(f"{path}: out must not be empty (leave it out for runs/{path.stem})")
    out = Path(rel(settings.pop("out", f"runs/{path.stem}")))
    for key, value in settings.items():  # a study file's "retries" is RunConfig's num_retries
        problem = setting_problem(FIELD_OF.get(key, key), value) if key != "jobs" else \
            (f"must be at least 1, not {value}" if value < 1 else None)
        if problem:
            raise error(f"{path}: {key} {problem}")
    if "critic" in settings or "label_budget" in settings:
        try:
            settings["critic"], settings["label_budget"] = canonical_critic(settings.get("critic", "gold"),
                                                                            settings.get("label_budget"))
        except ValueError as exc:
            raise error(f"{path}: critic/label_budget: {exc}") from None
    backend = settings.pop("backend", "threading")
    if backend not in BACKENDS:
        raise error(f"{path}: backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    jobs = settings.pop("jobs", 4)
    datasets = string_list(path, "datasets", data.get("datasets", []))
    if not datasets:
        raise error(f"{path}: datasets: give at least one dataset")
    seen: dict[str, str] = {}
    for name in datasets:  # a run directory is named after the dataset's folder name
        other = seen.setdefault(Path(name).name, name)
        if other != name or datasets.count(name) > 1:
            raise error(f"{path}: datasets: {name!r} is listed twice" if other == name else
                        f"{path}: datasets: {other!r} and {name!r} would write the same run directories "
                         f"(both are named {Path(name).name!r})")
    settings.pop("datasets", None)
    strategies = settings.pop("strategies", list(DEFAULT))
    if strategies == []:
        raise error(f"{path}: strategies: give at least one strategy (leave the field out for all five)")
    try:
        strategies = parse_strategies(",".join(string_list(path, "strategies", strategies)))
    except ValueError as exc:
        raise error(f"{path}: strategies: {exc}") from None

    raw_models = data.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise error(f"{path}: give at least one [[models]] table with a name")
    models = []
    for number, entry in enumerate(raw_models, start=1):
        where = f"[[models]] #{number}"
        check_table(path, where, entry, MODEL_FIELDS)
        if "name" not in entry:
            raise error(f"{path}: {where} has no name (a litellm model string)")
        values = {k: typed(path, f"{where}.{k}", v, MODEL_FIELDS[k]) for k, v in entry.items()}
        for key, value in values.items():
            problem = setting_problem(MODEL_FIELD_OF.get(key, key), value)
            if problem:
                raise error(f"{path}: {where}.{key} {problem}")
        add_url_secrets(values.get("api_base"))
        models.append(Model(**values))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise error(f"{path}: a model is listed twice in [[models]]")

    providers = {}
    for key, value in (data.get("providers") or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise error(f"{path}: providers.{key} must be a whole number >= 1 (calls in flight), not {value!r}")
        providers[key] = value
    strangers = sorted(set(providers) - {m.provider for m in models})
    if strangers:
        raise error(f"{path}: providers.{strangers[0]} is not the provider of any [[models]] entry (theirs: "
                    f"{', '.join(sorted({m.provider for m in models}))})")

    router = data.get("router") or {}
    for key in router:
        if key not in ROUTER_FIELDS:
            raise unknown(path, "router.", key, ROUTER_FIELDS)
    by_name = {m.name: m for m in models}
    for number, entry in enumerate(router.get("model_list") or [], start=1):
        where = f"[[router.model_list]] #{number}"
        check_table(path, where, entry, DEPLOYMENT_FIELDS)
        params = entry.get("litellm_params")
        if not isinstance(params, dict) or not isinstance(params.get("model"), str) \
                or not isinstance(params.get("api_base"), str):
            raise error(f"{path}: {where}.litellm_params needs model and api_base (one endpoint of the model)")
        sampling = sorted(set(params) - CONNECTION_PARAMS)
        if sampling:
            raise error(f"{path}: {where}.litellm_params.{sampling[0]} is not a connection setting ("
                        f"{', '.join(sorted(CONNECTION_PARAMS))}): a setting of how the model answers belongs in "
                         "[[models]] or the top level, where it is checked, recorded and part of the request hash")
        if entry.get("model_name") not in by_name:
            raise error(f"{path}: {where}.model_name {entry.get('model_name')!r} is not the name of a [[models]] "
                        f"entry ({', '.join(names)})")
        add_param_secrets(params)  # a key written in the study file is redacted like one in the environment
        model = by_name[entry["model_name"]]
        model.deployments = (model.deployments or []) + [entry]
    for model in models:
        if model.deployments and model.api_base:
            raise error(f"{path}: model {model.name!r} has both api_base and router deployments; keep one")

    probes_ = probe_tables.read(path, data.get("probes") or {}, datasets, names)
    credit = credit_table.read(path, data.get("credit"), datasets, names, strategies, settings)

    ablations_ = {}
    for name, spec in (data.get("ablations") or {}).items():
        if name not in ablations.NAMES:
            raise unknown(path, "ablations.", name, ablations.NAMES)
        if not isinstance(spec, dict):
            raise error(f"{path}: ablations.{name} must be a table")
        for key in spec:
            if key not in ABLATION_FIELDS:
                raise unknown(path, f"ablations.{name}.", key, ABLATION_FIELDS)
        checked = filters(path, f"ablations.{name}", spec, datasets, names)
        if "quantiles" in spec:
            checked["quantiles"] = _gate_quantiles(path, name, spec)
        else:
            try:
                checked["values"] = ablations.parse_values(name, spec.get("values", ablations.DEFAULT_VALUES[name]))
            except ValueError as exc:
                raise error(f"{path}: ablations.{name}.values: {exc}") from None
        ablations_[name] = checked

    return Study(path=path, out=out, models=models, datasets=datasets, strategies=strategies, settings=settings,
                 jobs=jobs, backend=backend, providers=providers, probes=probes_, ablations=ablations_, credit=credit,
                 routing_strategy=router.get("routing_strategy"))


def _gate_quantiles(path, name: str, spec: dict) -> list[float]:
    """``ablations.gate.quantiles``: thresholds chosen from the train split (never with ``values``)."""
    from critique.experiments import gate_choice

    if name != "gate":
        raise error(f"{path}: ablations.{name}.quantiles: only the gate ablation's thresholds are chosen from "
                    "quantiles (give values)")
    if "values" in spec:
        raise error(f"{path}: ablations.gate: give values or quantiles, not both")
    quantiles = spec["quantiles"]
    try:
        if not isinstance(quantiles, list) or not quantiles:
            raise ValueError(f"ablation gate: quantiles must be a list of numbers in (0, 1), not {quantiles!r}")
        return gate_choice.check_quantiles(quantiles)
    except ValueError as exc:
        raise error(f"{path}: ablations.gate.quantiles: {exc}") from None


def check(study: Study) -> dict[str, str]:
    """Every model routable (with its key), every dataset found; returns dataset -> checksum."""
    import litellm

    from critique.datasets.registry import resolve
    from critique.datasets.splits import DatasetError
    from critique.llm.client import LLMConfig
    from critique.llm.model_check import check_model

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
            raise error(f"{study.path}: [[models]] {model.name!r}: {exc}") from None
    checksums = {}
    for name in study.datasets:
        try:
            checksums[name] = resolve(name, study.settings.get("data_dir")).checksum
        except DatasetError as exc:
            raise error(f"{study.path}: datasets: {exc}") from None
    return checksums


def _api_base(model: Model) -> str | None:
    if model.deployments:
        return model.deployments[0]["litellm_params"]["api_base"]
    return model.api_base


