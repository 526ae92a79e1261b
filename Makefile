# Two entry points for people: `make run` and `make test`. Everything else is a step they depend on.
PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.8
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_PYTHON := $(abspath $(VENV))/bin/python
# A venv another interpreter built is removed here, before any target looks at it.
$(shell scripts/check-venv "$(PYTHON)" $(VENV) $(if $(filter file default,$(origin PYTHON)),0,1) >&2)
ifneq ($(.SHELLSTATUS),0)
$(error no Python to build $(VENV) with (see above))
endif

.PHONY: run test install install-dev lint typecheck unit lowest conformance bench widget widget-check browser-deps service-deps screenshots bench-widget fuzz

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)

# --inexact keeps uv itself (and dev tools, for `make run` after `make test`) in the venv.
install: $(UV)
	$(UV) sync --frozen --inexact --no-dev --all-packages --quiet

install-dev: $(UV)
	$(UV) sync --frozen --inexact --all-packages --quiet

# `make run PORT=9000 HOST=0.0.0.0` passes them on; anything else goes in ARGS.
run: install
	$(VENV)/bin/giftgenius serve $(if $(PORT),--port $(PORT)) $(if $(HOST),--host $(HOST)) $(ARGS)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install-dev
	$(VENV)/bin/mypy

# The widget: sources in widget/, built into the package (committed, so `make run` needs no Node).
WIDGET_DEPS := widget/node_modules/.package-lock.json
HOST_DEPS := tests/widget/host/node_modules/.package-lock.json
# The official TypeScript SDKs (v1 and v2) the interop tests drive against GiftGenius.
INTEROP_DEPS := tests/interop/ts/node_modules/.package-lock.json

$(WIDGET_DEPS): widget/package-lock.json
	npm ci --prefix widget --no-audit --no-fund --loglevel=error

$(HOST_DEPS): tests/widget/host/package-lock.json
	npm ci --prefix tests/widget/host --no-audit --no-fund --loglevel=error

$(INTEROP_DEPS): tests/interop/ts/package-lock.json
	npm ci --prefix tests/interop/ts --no-audit --no-fund --loglevel=error

widget: $(WIDGET_DEPS)
	node widget/build.mjs

# Its unit tests (node's runner), and a check that the shipped file is a build of the sources.
widget-check: $(WIDGET_DEPS)
	node --test widget/test/
	node widget/build.mjs --check

# The browser tests: Debian's chromium and the test host, bundled from the official AppBridge and client.
browser-deps: $(HOST_DEPS)
	scripts/ensure-tool chromium chromium "the browser tests"
	tests/widget/host/node_modules/.bin/tsc -p tests/widget/host
	node tests/widget/host/build.mjs

# A private redis-server for the Redis store tests (each starts its own on a free port).
service-deps:
	scripts/ensure-tool redis-server redis-server "the Redis tests"
	scripts/ensure-tool haproxy haproxy "the load-balanced tests"
	scripts/ensure-tool prometheus prometheus "the Prometheus scrape test"

# Test files are shared out among TEST_WORKERS processes (pytest-xdist), a whole file to one,
# so a file's fixtures (a browser, a server) start once, in the order tests/conftest.py gives
# (the longest files first). Most tests wait on other processes,
# so twice the cores keeps both cores busy; TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 4

unit: install-dev browser-deps service-deps $(INTEROP_DEPS)
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --cov --cov-fail-under=90

# The protocol fuzzers for longer than `make test` runs them (5000 cases per target, not 150).
fuzz: install-dev
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest tests/fuzz -p no:cacheprovider --no-cov -q -o faulthandler_timeout=0

screenshots: install-dev browser-deps
	$(VENV)/bin/python tests/widget/screenshots.py

# The widget's size, and the time from tool-result to the cards being drawn (median of 20).
bench-widget: install-dev browser-deps
	$(VENV)/bin/python tests/widget/bench_render.py

# The official MCP conformance suites against examples/everything (needs Node and ../shared).
conformance: install-dev
	$(VENV)/bin/python scripts/conformance.py

# The lowest versions herald's and GiftGenius's ranges allow (uv's lowest-direct), in a venv
# of their own, through the quick loop: the ranges in the metadata are what was tested.
LOWEST := .venv-lowest
lowest: install-dev
	rm -rf $(LOWEST)
	$(UV) venv --quiet --python $(VENV)/bin/python $(LOWEST)
	$(UV) pip install --quiet --python $(LOWEST)/bin/python --resolution lowest-direct \
		-e . -e packages/giftgenius --group dev
	$(LOWEST)/bin/python -m pytest -q -n $(TEST_WORKERS) --no-cov -m "not slow" -p no:cacheprovider
	# The dev tools pin a newer OpenTelemetry than herald[otel] allows (the official SDK's
	# own), so the telemetry tests run again on the lowest herald[otel] alone.
	rm -rf $(LOWEST)-otel
	$(UV) venv --quiet --python $(VENV)/bin/python $(LOWEST)-otel
	$(UV) pip install --quiet --python $(LOWEST)-otel/bin/python --resolution lowest-direct \
		-e '.[otel,client]' pytest==9.2.0 pytest-asyncio==1.5.0
	$(LOWEST)-otel/bin/python -m pytest -q -p no:cacheprovider \
		tests/server/test_tracing.py tests/telemetry/test_instruments.py tests/telemetry/test_exporting.py

test: lint typecheck widget-check unit lowest conformance

bench: install-dev
	$(VENV)/bin/python bench/compare.py
