"""Write the bytecode of the modules critique imports, once, at set-up.

pip compiles every file of every package it installs (about 2 GB here, a minute of CPU), while
critique imports a fraction of them; and where PYTHONDONTWRITEBYTECODE is set (as on this
project's machines) Python never writes bytecode itself, so each command would compile what it
imports at every start (about 7 seconds). So setup/venv.sh installs with --no-compile and runs
this with bytecode writing on: it imports what the commands import, and loads the embedded
encoder once, which imports the lazily loaded parts of transformers too.
"""

import importlib
import sys
from pathlib import Path

MODULES = ["litellm", "sentence_transformers", "faiss", "jinja2", "diskcache", "filelock", "tqdm", "joblib",
           "scipy.stats", "orjson", "msgspec", "matplotlib", "matplotlib.pyplot", "numpy"]


def main() -> None:
    assert not sys.dont_write_bytecode, "run with PYTHONDONTWRITEBYTECODE unset"
    import matplotlib

    matplotlib.use("Agg")
    for name in MODULES:
        importlib.import_module(name)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # critique is not installed yet
    from critique.engine.memory.embed import Encoder

    Encoder().encode(["warm up"])  # the shipped encoder, without a vector cache


if __name__ == "__main__":
    main()
