# The two commands of the README's quick start, and what they stand on.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
URL    ?=

.PHONY: run test check lint bench setup clean

$(BIN)/harvestman: pyproject.toml src/harvestman/_simhash.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,speed]'
	touch $@

# Bytecode for the editable install's modules, as pip compiles an installed package's: where
# PYTHONDONTWRITEBYTECODE is set (it is on the CI machines) every command would compile them
# again at each start (0.15-0.5 s of a crawl's start, and of each CLI test's subprocess).
setup: $(BIN)/harvestman
	@$(BIN)/python -m compileall -q src/harvestman > /dev/null

# pytest rewrites every test module's asserts on import and keeps the result as bytecode; with
# PYTHONDONTWRITEBYTECODE set it keeps nothing, and each worker of each run rewrote them all
# again (~12 s of a 2-core machine's fast tier, where collecting took 19 s a worker).
PYTEST_BYTECODE := PYTHONDONTWRITEBYTECODE=

# Crawl URL (or, without one, the bundled demo site on 127.0.0.1) into ./harvestman.db.
run: setup
	URL='$(URL)' BIN='$(BIN)' bash scripts/run.sh

# The whole test suite: lint, types (mypy: strict for the crawler and the store), the import
# contract (tests/test_architecture.py), then pytest (PostgreSQL tests need 127.0.0.1:5432). The
# dashboard's browser tests drive Debian's chromium, the alert rules' unit tests promtool (Debian's
# prometheus package, about 19 MB): both installed here when missing (as root).
CHROMIUM ?= /usr/bin/chromium
PROMTOOL ?= /usr/bin/promtool

test: setup
	@if [ ! -x "$(CHROMIUM)" ] && command -v apt-get >/dev/null; then \
		echo "installing chromium for the dashboard's browser tests"; \
		apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y --no-install-recommends chromium; }; \
	fi
	@if [ ! -x "$(PROMTOOL)" ] && command -v apt-get >/dev/null; then \
		echo "installing promtool (prometheus) for the alert rules' unit tests"; \
		apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y --no-install-recommends prometheus; }; \
	fi
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(PYTEST_BYTECODE) HARVESTMAN_SLOW_TESTS=1 HYPOTHESIS_PROFILE=ci $(BIN)/pytest

# The tier for every change (under a minute on 2 cores): lint, types, the import contract and
# the fast tests, those that need no server, service, subprocess or browser (tests/support/
# tiers.py sorts them), with hypothesis's dev profile (fewer examples). `make test` runs all.
check: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(PYTEST_BYTECODE) HYPOTHESIS_PROFILE=dev $(BIN)/pytest -m "not slow" --durations=10

bench: setup
	$(BIN)/python bench/crawl_bench.py

clean:
	rm -rf $(VENV) harvestman.db harvestman.db-wal harvestman.db-shm pages.jsonl bench/out
