# Two commands: `make demo` and `make test`. Each creates its own virtual environment with what
# it needs: the demo only the memory extra (.venv-demo), the tests the whole dev toolchain (.venv).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_VENV := .venv-demo
DEMO_PY := $(DEMO_VENV)/bin/python
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q praisonsession  # what pip does for a regular install: bytecode ready
	touch $(STAMP)

# The demo needs the memory extra and nothing else: no test, lint or docs tools to download.
# uv installs the same packages in a fraction of pip's time (parallel downloads and unpacking);
# if uv cannot be had, pip does it alone.
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	($(DEMO_PY) -m pip install --quiet --disable-pip-version-check uv \
	  && $(DEMO_PY) -m uv pip install --quiet --python $(DEMO_PY) --compile-bytecode -e '.[memory]') \
	  || $(DEMO_PY) -m pip install --quiet --disable-pip-version-check -e '.[memory]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(DEMO_PY) -m praisonsession.demo

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
	$(PY) benchmarks/bench_memory_search.py
	$(PY) benchmarks/bench_knowledge_ingest.py
	$(PY) benchmarks/bench_agents.py
	$(PY) benchmarks/bench_redis.py
	$(PY) benchmarks/bench_postgres.py
	$(PY) benchmarks/bench_limits.py
	$(PY) benchmarks/bench_remote.py
	$(PY) benchmarks/bench_server.py
	$(PY) benchmarks/bench_hierarchy.py
	$(PY) benchmarks/bench_agentscope_agents.py
	$(PY) benchmarks/bench_tracing.py
	$(PY) benchmarks/bench_long_conversations.py
	$(PY) benchmarks/bench_encryption.py

docs: $(STAMP)
	$(PY) -m mkdocs build --strict -f docs/mkdocs.yml --site-dir ../site

clean:
	rm -rf $(VENV) $(DEMO_VENV) site .pytest_cache .ruff_cache .praisonsession
