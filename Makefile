# Two commands: `make demo` and `make test`. Each creates its own virtual environment with what
# it needs: the demo only the memory extra (.venv-demo), the tests the whole dev toolchain (.venv).
# `make check` is the edit loop's short version of `make test`: lint, types, the import contract
# and the tests not marked slow.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_VENV := .venv-demo
DEMO_PY := $(DEMO_VENV)/bin/python
DEMO_STAMP := $(DEMO_VENV)/.installed
# The OpenAI Agents SDK, ADK and LangGraph need pydantic >= 2.12, AgentScope 1.0.21 (the
# interop tests) < 2.12: the frameworks' tests get an environment of their own.
FW_VENV := .venv-frameworks
FW_PY := $(FW_VENV)/bin/python
FW_STAMP := $(FW_VENV)/.installed
# The documentation site needs only the docs extra (mkdocs, mkdocstrings, Pygments): a small
# environment of its own, not the test environment's gigabyte.
DOCS_VENV := .venv-docs
DOCS_PY := $(DOCS_VENV)/bin/python
DOCS_STAMP := $(DOCS_VENV)/.installed
LINTED := praisonsession tests benchmarks examples notebooks

.PHONY: demo test check lint bench bench-adapters docs clean

# The suites run on this many processes (pytest-xdist): CI's two cores (`make test WORKERS=4`
# where there are more).
WORKERS ?= 2
# worksteal: a worker that runs out of tests takes queued ones from the other, so the suite's
# few minute-long tests (crashes, many processes) do not leave one core idle at the end. Each
# worker starts its own Redis, PostgreSQL and Chroma, on free ports, and sets up the module
# fixtures (a server, a browser, the built site) of the tests it runs. Grouping a module's tests
# on one worker (--dist loadgroup) does nothing with pytest 9.2 (pytest-xdist issue 1386).
PYTEST_PARALLEL := -n $(WORKERS) --dist worksteal

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q praisonsession  # what pip does for a regular install: bytecode ready
	touch $(STAMP)

$(FW_STAMP): pyproject.toml
	$(PYTHON) -m venv $(FW_VENV)
	$(FW_PY) -m pip install --quiet --upgrade pip
	$(FW_PY) -m pip install --quiet -e '.[dev-frameworks]'
	touch $(FW_STAMP)

# The demo needs the memory extra and nothing else: no test, lint or docs tools to download.
# uv installs the same packages in a fraction of pip's time (parallel downloads and unpacking);
# if uv cannot be had, pip does it alone (always with `make demo DEMO_INSTALLER=pip`): a current
# pip first, which installs the extra in half the time of the one a new venv comes with (Python
# 3.11's pip 23.2). Neither byte-compiles the packages up front (about a fifth of pip's time,
# 110 MB of .pyc files): Python compiles the few modules the demo imports when it first runs.
DEMO_INSTALLER ?= uv
PIP_QUICK := --quiet --disable-pip-version-check --no-compile --prefer-binary
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	([ "$(DEMO_INSTALLER)" = uv ] \
	  && $(DEMO_PY) -m pip install $(PIP_QUICK) uv \
	  && $(DEMO_PY) -m uv pip install --quiet --python $(DEMO_PY) -e '.[memory]') \
	  || ($(DEMO_PY) -m pip install $(PIP_QUICK) --upgrade pip \
	  && $(DEMO_PY) -m pip install $(PIP_QUICK) -e '.[memory]')
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(DEMO_PY) -m praisonsession.apps.demo

# The site is built (strict, no notices) by tests/test_docs.py, in the suite.
test: $(STAMP) $(FW_STAMP)
	sh tests/browser/install_chromium.sh  # Debian's chromium + driver for tests/test_ui_browser.py
	$(PY) -m ruff check $(LINTED)
	$(PY) -m mypy  # strict over praisonsession/ (pyproject.toml)
	$(VENV)/bin/lint-imports --no-logo  # the floors' import contract (pyproject.toml)
	$(PY) -m pytest $(PYTEST_PARALLEL)
	$(FW_PY) -m pytest $(PYTEST_PARALLEL) -o asyncio_default_fixture_loop_scope=function \
	  tests/frameworks  # the frameworks' environment (and its pytest-asyncio)

# Under three minutes with a warm mypy cache: what an edit most often breaks, every module's
# fast tests included (the frameworks' adapters in their own environment). The tests marked slow
# (crashes, many processes, new-process resumes, notebooks, browsers, benchmarks) wait for
# `make test`, which runs everything.
check: $(STAMP) $(FW_STAMP)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check praisonsession tests benchmarks examples
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m pytest $(PYTEST_PARALLEL) -m "not slow"
	$(FW_PY) -m pytest $(PYTEST_PARALLEL) -m "not slow" -o asyncio_default_fixture_loop_scope=function \
	  tests/frameworks

# ruff reads notebooks natively: they are linted like the code. Their cells keep the layout
# written for a reader (argument lists one line per pair), so the format check skips them.
# mypy (strict) and lint-imports (who may import whom) read their settings from pyproject.toml.
lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check praisonsession tests benchmarks examples
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-logo

bench: $(STAMP)
	$(PY) benchmarks/bench_foundation.py
	$(PY) benchmarks/bench_memory.py
	$(PY) benchmarks/bench_memory_quality.py
	$(PY) benchmarks/bench_memory_search.py
	$(PY) benchmarks/bench_knowledge_ingest.py
	$(PY) benchmarks/bench_agents.py
	$(PY) benchmarks/bench_praisonai_db.py
	$(PY) benchmarks/bench_redis.py
	$(PY) benchmarks/bench_postgres.py
	$(PY) benchmarks/bench_erasure.py
	$(PY) benchmarks/bench_ttl_reads.py
	$(PY) benchmarks/bench_limits.py
	$(PY) benchmarks/bench_remote.py
	$(PY) benchmarks/bench_server.py
	$(PY) benchmarks/bench_hierarchy.py
	$(PY) benchmarks/bench_agentscope_agents.py
	$(PY) benchmarks/bench_tracing.py
	$(PY) benchmarks/bench_long_conversations.py
	$(PY) benchmarks/bench_encryption.py

# The framework adapters beside each framework's own backend (LangGraph's SqliteSaver, the
# OpenAI Agents SDK's sessions, ADK's services, AgentScope 2.0's storage), at the same
# durability: in the frameworks' environment, which `make bench`'s does not hold.
bench-adapters: $(FW_STAMP)
	$(FW_PY) benchmarks/bench_langgraph.py
	$(FW_PY) benchmarks/bench_openai_agents.py
	$(FW_PY) benchmarks/bench_adk.py
	$(FW_PY) benchmarks/bench_group_commit.py
	$(FW_PY) benchmarks/bench_agentscope_storage.py

$(DOCS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_PY) -m pip install --quiet --upgrade pip
	$(DOCS_PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

# Open site/index.html: the pages are files (name.html) and load nothing from the network.
docs: $(DOCS_STAMP)
	$(DOCS_PY) -m mkdocs build --strict -f docs/mkdocs.yml --site-dir ../site

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(FW_VENV) $(DOCS_VENV) .venv-pages site .pytest_cache .ruff_cache .praisonsession
