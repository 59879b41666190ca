"""critique: learning a classification task from critiques of the model's own mistakes."""

import os as _os

# litellm must not try to download its price list (no network is assumed).
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
