# Two commands: `make demo` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q praisonsession  # what pip does for a regular install: bytecode ready
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m praisonsession.demo

test: $(STAMP)
	sh tests/browser/install_chromium.sh  # Debian's chromium + driver for tests/test_ui_browser.py
	$(PY) -m ruff check praisonsession tests benchmarks examples
	$(PY) -m pytest
	$(PY) -m mkdocs build --strict --quiet -f docs/mkdocs.yml --site-dir ../$(VENV)/site

lint: $(STAMP)
	$(PY) -m ruff check praisonsession tests benchmarks examples
	$(PY) -m ruff format --check praisonsession tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/bench_foundation.py
	$(PY) benchmarks/bench_memory.py
	$(PY) benchmarks/bench_memory_quality.py
	$(PY) benchmarks/bench_knowledge_ingest.py
	$(PY) benchmarks/bench_agents.py
	$(PY) benchmarks/bench_redis.py
	$(PY) benchmarks/bench_postgres.py
	$(PY) benchmarks/bench_limits.py
	$(PY) benchmarks/bench_remote.py
	$(PY) benchmarks/bench_server.py
	$(PY) benchmarks/bench_hierarchy.py
	$(PY) benchmarks/bench_agentscope_agents.py
	$(PY) benchmarks/bench_long_conversations.py

docs: $(STAMP)
	$(PY) -m mkdocs build --strict -f docs/mkdocs.yml --site-dir ../site

clean:
	rm -rf $(VENV) site .pytest_cache .ruff_cache .praisonsession
