#!/bin/sh
# Creates the virtual environment (.venv) with critique and its pinned dependencies.
#
# llama-cpp-python ships as source only and compiles llama.cpp (about 3 minutes on 2 cores), so
# its wheel is built in the background while torch and everything else download and install.
# The build leaves out llama.cpp's multimodal and "common" libraries, which the Python bindings
# never load (see llama-cpp-python.cmake).
set -eu
PY=${PY:-python3}
VENV=${VENV:-.venv}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE=$here/llama-cpp-python.cmake}"

# the project's direct dependencies, from pyproject.toml: llama-cpp-python, and all the others
requirements() {
    "$PY" -c 'import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
llama = [d for d in deps if d.startswith("llama-cpp-python")]
print(" ".join(llama if sys.argv[2] == "llama" else [d for d in deps if d not in llama]))' "$root/pyproject.toml" "$1"
}
llama=$(requirements llama)
others=$(requirements others)

"$PY" -m venv "$VENV"
pip="$VENV/bin/pip"
"$pip" install -q --upgrade pip
mkdir -p "$VENV/wheels"
log="$VENV/llama-cpp-python-build.log"
"$pip" wheel -q --no-deps -w "$VENV/wheels" "$llama" > "$log" 2>&1 &
build=$!
"$pip" install -q torch==2.13.0  # the CPU build; an unpinned torch pulls a multi-GB CUDA build
"$pip" install -q $others
if ! wait "$build"; then
    tail -n 40 "$log" >&2
    echo "setup: building $llama failed (the whole log: $log)" >&2
    exit 1
fi
"$pip" install -q --no-deps --no-index --find-links "$VENV/wheels" "$llama"
"$pip" install -q -e "$root[test]"
