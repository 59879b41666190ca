"""critique: learning a classification task from critiques of the model's own mistakes."""

import os as _os

# litellm must not try to download its price list (no network is assumed).
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"


def __getattr__(name: str):
    """``critique.Learner``, ``critique.Prediction`` and ``critique.Evaluation`` on first use: ``import critique``
    stays light."""
    if name in ("Learner", "Prediction", "Evaluation"):
        from importlib import import_module

        return getattr(import_module("critique.learner"), name)
    raise AttributeError(f"module 'critique' has no attribute {name!r}")
