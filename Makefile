# critique: the two commands of the README, and the rest.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1

.PHONY: setup demo test docs reproduce bench bench-throughput clean

$(BIN)/critique: pyproject.toml setup/venv.sh setup/llama-cpp-python.cmake
	PY=$(PY) VENV=$(VENV) setup/venv.sh
	touch $(BIN)/critique

setup: $(BIN)/critique

demo: setup  ## README command 1: set up, then the demo run: the positive control on the embedded model that learns
	$(BIN)/critique run --dataset control-pos --model local/qwen2.5-coder-0.5b --limit 25 --prompts turns \
	    --example-order nearest-last --answer-by loglikelihood --strategies zero_shot,EP_LABEL,EP_CRIT --out runs/demo

test: setup  ## README command 2: the test suite
	$(BIN)/python -m pytest -q

# The docs extra of pyproject.toml (its pins, not the project: no model or compiler needed) into the venv, then the
# site, every link and anchor checked (mkdocs.yml's validation; --strict fails on any warning).
docs:  ## the documentation as a site in build/site, every link checked (CI runs it after the tests)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q $$($(BIN)/python -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['docs']))")
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

reproduce: setup  ## every table from the logs shipped in logs/, the field's methods' comparison (logs-methods/), the public slice (logs-public/), the memory papers' experiments (logs-memory/)
	$(BIN)/critique tables logs/
	$(BIN)/critique tables logs-methods/
	$(BIN)/critique tables logs-public/
	$(BIN)/critique tables logs-memory/ logs/mcr-gen__local_qwen2.5-coder-0.5b logs/pref-gen__local_qwen2.5-coder-0.5b

bench: setup  ## critique tables on a study-scale synthetic log set
	$(BIN)/python bench/bench_tables.py

bench-throughput: setup  ## test-stage throughput against a local server
	$(BIN)/python bench/bench_throughput.py --repeat 3

clean:
	rm -rf runs build *.egg-info
