# kernbench: `make bench` runs the bundled suite, `make test` runs the tests.
# Each target creates .venv on first use and installs what it needs (pins in constraints.txt).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUTPUT_DIR ?= reports
BENCH_ARGS ?=

.PHONY: bench bench-quick test lint check clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[torch,jax,plots,dev]'
	touch $(STAMP)

bench: $(STAMP)
	$(PY) tools/bench_all.py --iters 30 --warmup 3 --output-dir $(OUTPUT_DIR) $(BENCH_ARGS)

bench-quick: $(STAMP)
	$(PY) tools/bench_all.py --iters 10 --warmup 3 --output-dir $(OUTPUT_DIR) $(BENCH_ARGS)

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests tools benchmarks kernels integrations
	$(VENV)/bin/mypy

check: test lint

clean:
	rm -rf $(VENV) $(OUTPUT_DIR) .pytest_cache .mypy_cache .ruff_cache
