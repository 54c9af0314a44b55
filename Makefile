# The two front-door commands: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow bench ui install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/adri demo

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/slot_efficiency.py 120 4 600
	$(BIN)/python benchmarks/classification_overhead.py 1000
	$(BIN)/python benchmarks/dagster_range_run.py 200
	$(BIN)/python benchmarks/coded_model.py

ui: $(STAMP)
	DAGSTER_HOME=$${DAGSTER_HOME:-$(CURDIR)/.dagster_home} ; mkdir -p $$DAGSTER_HOME ; \
	DAGSTER_HOME=$$DAGSTER_HOME $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

clean:
	rm -rf data/warehouse .dagster_home
